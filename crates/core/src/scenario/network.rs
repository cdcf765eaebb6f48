//! `network { delay "25ms"; jitter "5ms"; bandwidth "100Mbit"; loss "0.1%" }` in a target (the
//! same settings may be written as properties: `network delay="25ms" jitter="5ms"`): the link
//! the run's shaping proxy emulates (`runner/netem`). Checked here: each value's unit and
//! range, and that the target is one a TCP proxy can stand in front of.

use kdl::{KdlNode, KdlValue};

use super::ctx::{Ctx, NodeReader, Val};
use super::model::{Endpoint, Target};
use crate::protocol::NetworkShape;
use crate::units::{Bandwidth, Duration, Percent};

/// The settings of `network`, in the order diagnostics list them.
const KEYS: [&str; 4] = ["delay", "jitter", "bandwidth", "loss"];

const EXAMPLE: &str =
    "write e.g. network { delay \"25ms\"; jitter \"5ms\"; bandwidth \"100Mbit\"; loss \"0.1%\" }";

/// Reads the `network` node (its properties and children); `None` after an error.
pub(super) fn read(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<NetworkShape> {
    let node = r.node;
    let mut found: [Option<Val>; 4] = Default::default();
    for (i, &key) in KEYS.iter().enumerate() {
        found[i] = r.prop(ctx, key);
    }
    let mut unknown = false;
    for child in r.children() {
        let name = child.name().value();
        let Some(i) = KEYS.iter().position(|k| *k == name) else {
            ctx.unknown_node(child, "`network`", &KEYS);
            unknown = true;
            continue;
        };
        super::settings::with_reader(ctx, child, |ctx, cr| {
            if let Some(v) = super::ctx::one_arg(ctx, cr, "a value like \"25ms\"") {
                put(ctx, &mut found, i, v);
            }
            // `delay "25ms" jitter="5ms"`: the others as the child's properties, as the
            // one-line form reads.
            for (j, &key) in KEYS.iter().enumerate().filter(|(j, _)| *j != i) {
                if let Some(v) = cr.prop(ctx, key) {
                    put(ctx, &mut found, j, v);
                }
            }
        });
    }
    if found.iter().all(Option::is_none) {
        if unknown {
            return None;
        }
        ctx.error(
            ctx.name_span(node),
            "`network` sets nothing",
            "needs at least one of delay, jitter, bandwidth, loss",
            Some(EXAMPLE.into()),
        );
        return None;
    }
    let [delay, jitter, bandwidth, loss] = found;
    let delay = delay.map_or(Some(Duration::ZERO), |v| bounded_delay(ctx, &v, "delay"));
    let jitter = jitter.map_or(Some(Duration::ZERO), |v| bounded_delay(ctx, &v, "jitter"));
    let bandwidth = bandwidth.map(|v| bandwidth_value(ctx, &v).ok_or(()));
    let loss = loss.map_or(Some(Percent(0.0)), |v| loss_value(ctx, &v));
    Some(NetworkShape {
        delay: delay?,
        jitter: jitter?,
        bandwidth: bandwidth.transpose().ok()?,
        loss: loss?,
    })
}

/// Keeps setting `i`'s value, reporting one given before.
fn put(ctx: &mut Ctx<'_>, found: &mut [Option<Val>; 4], i: usize, v: Val) {
    if found[i].is_some() {
        ctx.error(
            v.span,
            format!("`{}` given twice in `network`", KEYS[i]),
            "given again here",
            Some("give each network setting once".into()),
        );
    }
    found[i] = Some(v);
}

/// A delay or jitter: a duration up to [`NetworkShape::MAX_DELAY`].
fn bounded_delay(ctx: &mut Ctx<'_>, v: &Val, what: &str) -> Option<Duration> {
    let d = ctx.duration(v, what)?;
    if d.as_std() > NetworkShape::MAX_DELAY {
        ctx.error(
            v.span,
            format!("`{what}` too long"),
            format!("at most {}, got {d}", Duration(NetworkShape::MAX_DELAY)),
            Some("a one-way delay is milliseconds: write e.g. \"25ms\"".into()),
        );
        return None;
    }
    Some(d)
}

fn bandwidth_value(ctx: &mut Ctx<'_>, v: &Val) -> Option<Bandwidth> {
    let KdlValue::String(s) = &v.value else {
        ctx.error(
            v.span,
            "wrong type for `bandwidth`",
            format!("expected a rate with a unit, got {}", v.shown()),
            Some("write e.g. bandwidth \"100Mbit\"".into()),
        );
        return None;
    };
    match s.parse::<Bandwidth>() {
        Ok(b) => Some(b),
        Err(e) => {
            ctx.error(
                v.span,
                "invalid `bandwidth`",
                e.0,
                Some("write e.g. bandwidth \"100Mbit\" (bit, kbit, Mbit, Gbit, MB/s)".into()),
            );
            None
        }
    }
}

/// A loss share: a percentage up to [`NetworkShape::MAX_LOSS`].
fn loss_value(ctx: &mut Ctx<'_>, v: &Val) -> Option<Percent> {
    let parsed = match &v.value {
        KdlValue::String(s) => s.parse::<Percent>().map_err(|e| e.0),
        _ => Err(format!("expected a percentage, got {}", v.shown())),
    };
    match parsed {
        Ok(p) if p.0 <= NetworkShape::MAX_LOSS => Some(p),
        Ok(p) => {
            ctx.error(
                v.span,
                "`loss` too high",
                format!("at most {}, got {p}", Percent(NetworkShape::MAX_LOSS)),
                Some("a lossy path loses a few percent at most: write e.g. \"0.1%\"".into()),
            );
            None
        }
        Err(e) => {
            ctx.error(
                v.span,
                "invalid `loss`",
                e,
                Some("write e.g. loss \"0.1%\"".into()),
            );
            None
        }
    }
}

/// A shaping proxy forwards bytes to the target's host: an https target would need TLS
/// through it with the original name, which the client's URL rewrite cannot keep (see
/// `docs/network.md`), so it is refused.
pub(super) fn fits_endpoint(ctx: &mut Ctx<'_>, node: &KdlNode, t: &Target) {
    if t.run.network.is_none() {
        return;
    }
    let https = match &t.endpoint {
        Endpoint::Sim(_) => false,
        Endpoint::Url(u) => is_https(&u.value),
        Endpoint::Urls(routes) => routes.urls.iter().any(|u| is_https(&u.url)),
    };
    let Some(network) = node
        .children()
        .and_then(|c| c.nodes().iter().find(|n| n.name().value() == "network"))
    else {
        return;
    };
    if https {
        ctx.error(
            ctx.name_span(network),
            "network shaping needs an http target",
            "the target is https",
            Some(
                "the shaping proxy cannot carry TLS with the server's name; shape a plain \
                 http URL (e.g. the server's port inside the cluster) or remove `network`"
                    .into(),
            ),
        );
    }
}

/// Whether `url` is an https URL (any case, as URLs' schemes are).
pub(crate) fn is_https(url: &str) -> bool {
    url.get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
}
