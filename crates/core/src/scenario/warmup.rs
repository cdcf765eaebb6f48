//! `warmup until="stable" [max="5m"] [check-every="2s"] [ttft-cv=0.2] [min-clock-ratio=0.9]
//! [max-temp-rate="1C/min"] [window="30s"]`: warm-up that keeps sending until the server is
//! steady (see `docs/telemetry.md`, "Warm-up until stable"). Decoded into [`WarmupUntil`]; the
//! `max` becomes the warm-up's duration limit.

use kdl::{KdlNode, KdlValue};

use super::ctx::{Ctx, NodeReader, Val};
use super::error::suggest;
use super::model::{StageLimit, Warmup};
use super::settings::Setting;
use super::written::Spanned;
use crate::telemetry::{StabilityRule, WarmupUntil};
use crate::units::Duration;

/// What `until=` accepts.
const UNTIL: &[&str] = &["stable"];
/// Properties that only mean something with `until="stable"`, each read into the rule.
const RULE_PROPS: &[Setting<ReadRule>] = &[
    Setting::once("max", |ctx, v, u| u.max = ctx.positive_duration(v, "max")),
    Setting::once("check-every", |ctx, v, u| {
        u.check_every = ctx.positive_duration(v, "check-every");
    }),
    Setting::once("ttft-cv", |ctx, v, u| {
        let cv = ctx.number_min(v, "ttft-cv", 0.0, true);
        set(&mut u.rule, cv, |r, cv| r.ttft_cv_threshold = cv);
    }),
    Setting::once("min-clock-ratio", |ctx, v, u| {
        let ratio = fraction(ctx, v, "min-clock-ratio");
        set(&mut u.rule, ratio, |r, x| r.min_clock_ratio = x);
    }),
    Setting::once("max-temp-rate", |ctx, v, u| {
        let rate = temp_rate(ctx, v);
        set(&mut u.rule, rate, |r, x| r.max_temp_rate_c_per_min = x);
    }),
    Setting::once("window", |ctx, v, u| {
        let w = ctx.positive_duration(v, "window");
        set(&mut u.rule, w, |r, w| r.window = w);
    }),
];
type ReadRule = fn(&mut Ctx<'_>, &Val, &mut Rule);

/// The rule as its properties are read: each part `None` once invalid.
struct Rule {
    rule: Option<StabilityRule>,
    check_every: Option<Duration>,
    max: Option<Duration>,
}

/// Longest warm-up when `until="stable"` has no `max=`.
pub const DEFAULT_UNTIL_MAX: Duration = Duration(std::time::Duration::from_secs(5 * 60));
/// How often the rule is checked when `check-every=` is not given.
pub const DEFAULT_CHECK_EVERY: Duration = Duration(std::time::Duration::from_secs(2));

/// What the `until` part of a `warmup` node says.
pub(crate) struct UntilOut {
    /// `until=` is written (valid or not).
    pub given: bool,
    /// The whole rule, when every value in it is valid.
    pub spec: Option<WarmupUntil>,
    /// `max=` (or its default), when valid.
    pub max: Option<Duration>,
}

/// `warmup requests=N | duration="30s" | until="stable" … [dataset="…"] [clients=N]`.
pub(crate) fn warmup(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<Warmup> {
    let mut r = NodeReader::new(ctx, node);
    let requests = r.prop(ctx, "requests");
    let duration = r.prop(ctx, "duration");
    let dataset = r.prop(ctx, "dataset").and_then(|v| {
        ctx.name_string(&v, "dataset")
            .map(|s| Spanned::new(s, v.span))
    });
    let clients = match r.prop(ctx, "clients") {
        Some(v) => ctx.u32_at_least(&v, "clients", 1),
        None if node.entry("clients").is_some() => None,
        None => Some(4),
    };
    let until = until(ctx, &mut r, node);
    let limit = match (requests, duration) {
        (req, dur) if until.given => limit(ctx, &until, req, dur),
        (Some(_), Some(d)) => {
            ctx.error(
                d.span,
                "`warmup` has both `requests` and `duration`",
                "second limit",
                Some("keep one of requests= and duration=".into()),
            );
            None
        }
        (Some(v), None) => ctx
            .uint(&v, "requests", 1, u64::MAX)
            .map(StageLimit::Requests),
        (None, Some(v)) => ctx
            .positive_duration(&v, "duration")
            .map(StageLimit::Duration),
        (None, None) => {
            if node.entry("requests").is_none() && node.entry("duration").is_none() {
                ctx.error(
                    ctx.name_span(node),
                    "`warmup` has no limit",
                    "missing requests= or duration=",
                    Some("write warmup requests=10 or warmup duration=\"30s\"".into()),
                );
            }
            None
        }
    };
    r.finish(ctx);
    Some(Warmup {
        limit: limit?,
        dataset,
        clients: clients?,
        until: if until.given { Some(until.spec?) } else { None },
    })
}

/// Reads `until=` and its properties; reports them when they come without `until="stable"`.
pub(crate) fn until(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, node: &KdlNode) -> UntilOut {
    let until = r.prop(ctx, "until");
    let given = node.entry("until").is_some();
    let mut props = Vec::new();
    for prop in RULE_PROPS {
        if let Some(v) = r.prop(ctx, prop.name) {
            props.push((prop, v));
        }
    }
    let mut out = UntilOut {
        given,
        spec: None,
        max: None,
    };
    if !given {
        for (prop, v) in &props {
            let name = prop.name;
            ctx.error(
                v.span,
                format!("`{name}` on `warmup` without until=\"stable\""),
                "only used by a warm-up that runs until stable",
                Some(format!(
                    "add until=\"stable\", or remove {name}= and keep requests= or duration="
                )),
            );
        }
        return out;
    }
    let until_ok = until.and_then(|v| {
        let s = ctx.string(&v, "until")?;
        if UNTIL.contains(&s.as_str()) {
            Some(())
        } else {
            ctx.error(
                v.span,
                format!("unknown `until` condition `{s}`"),
                "not a warm-up condition",
                Some(suggest(&s, UNTIL, "condition")),
            );
            None
        }
    });
    let mut rule = Rule {
        rule: Some(StabilityRule::default()),
        check_every: Some(DEFAULT_CHECK_EVERY),
        max: Some(DEFAULT_UNTIL_MAX),
    };
    for (prop, v) in &props {
        (prop.read)(ctx, v, &mut rule);
    }
    out.max = rule.max;
    out.spec = match (until_ok, rule.rule, rule.check_every) {
        (Some(()), Some(rule), Some(check_every)) => Some(WarmupUntil { rule, check_every }),
        _ => None,
    };
    out
}

/// The warm-up's limit with `until=`: its `max`. `requests=`/`duration=` are then an error.
pub(crate) fn limit(
    ctx: &mut Ctx<'_>,
    u: &UntilOut,
    requests: Option<Val>,
    duration: Option<Val>,
) -> Option<StageLimit> {
    for (name, v) in [("requests", requests), ("duration", duration)] {
        if let Some(v) = v {
            ctx.error(
                v.span,
                format!("`warmup` has both until=\"stable\" and `{name}`"),
                "a warm-up until stable ends by itself",
                Some("remove it; bound the warm-up with max=\"5m\" instead".into()),
            );
        }
    }
    u.max.map(StageLimit::Duration)
}

/// Keeps `rule` only while every value read so far is valid.
fn set<T>(rule: &mut Option<StabilityRule>, v: Option<T>, f: impl FnOnce(&mut StabilityRule, T)) {
    match (rule.as_mut(), v) {
        (Some(r), Some(v)) => f(r, v),
        _ => *rule = None,
    }
}

/// A number in `(0, 1]`.
fn fraction(ctx: &mut Ctx<'_>, v: &Val, what: &str) -> Option<f64> {
    let x = ctx.number_min(v, what, 0.0, true)?;
    if x > 1.0 {
        ctx.error(
            v.span,
            format!("`{what}` out of range"),
            format!("must be ≤ 1, got {x}"),
            Some("a share of the maximum SM clock, e.g. 0.9".into()),
        );
        return None;
    }
    Some(x)
}

/// `max-temp-rate`: °C per minute as a number, or a string like `"1C/min"`, `"0.5°C/min"`,
/// `"60C/h"`, `"0.02C/s"`.
fn temp_rate(ctx: &mut Ctx<'_>, v: &Val) -> Option<f64> {
    const HELP: &str = "write °C per minute: max-temp-rate=1 or max-temp-rate=\"1C/min\"";
    let rate = match &v.value {
        KdlValue::Integer(_) | KdlValue::Float(_) => ctx.number(v, "max-temp-rate")?,
        KdlValue::String(s) => match parse_temp_rate(s) {
            Some(r) => r,
            None => {
                ctx.error(
                    v.span,
                    "invalid `max-temp-rate`",
                    format!(
                        "expected a temperature rate like \"1C/min\", got {}",
                        v.shown()
                    ),
                    Some(HELP.into()),
                );
                return None;
            }
        },
        _ => {
            ctx.error(
                v.span,
                "wrong type for `max-temp-rate`",
                format!("expected a number or \"1C/min\", got {}", v.shown()),
                Some(HELP.into()),
            );
            return None;
        }
    };
    if rate.is_nan() || rate <= 0.0 {
        ctx.error(
            v.span,
            "`max-temp-rate` out of range",
            format!("must be > 0 °C/min, got {}", v.shown()),
            Some(HELP.into()),
        );
        return None;
    }
    Some(rate)
}

/// `"1C/min"` → 1.0 (°C per minute); `None` for anything else.
fn parse_temp_rate(s: &str) -> Option<f64> {
    let (num, per) = s.trim().split_once('/')?;
    let per_min = match per.trim() {
        "s" | "sec" => 60.0,
        "m" | "min" => 1.0,
        "h" => 1.0 / 60.0,
        _ => return None,
    };
    let num = num.trim();
    let num = num
        .strip_suffix("°C")
        .or_else(|| num.strip_suffix('C'))
        .or_else(|| num.strip_suffix('c'))?;
    let n: f64 = num.trim().parse().ok()?;
    n.is_finite().then_some(n * per_min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperature_rates_in_any_unit_become_celsius_per_minute() {
        assert_eq!(parse_temp_rate("1C/min"), Some(1.0));
        assert_eq!(parse_temp_rate("0.5°C/min"), Some(0.5));
        assert_eq!(parse_temp_rate(" 60 C / h "), Some(1.0));
        assert_eq!(parse_temp_rate("0.1C/s"), Some(6.0));
        assert_eq!(parse_temp_rate("1"), None);
        assert_eq!(parse_temp_rate("1K/min"), None);
        assert_eq!(parse_temp_rate("C/min"), None);
        assert_eq!(parse_temp_rate("1C/day"), None);
    }
}
