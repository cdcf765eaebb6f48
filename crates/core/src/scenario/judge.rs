//! `judge { url "http://…/v1"; model "…"; api-key env="JUDGE_KEY"; rubric "…" (or
//! `rubric file="rubric.txt"`); scale 5; concurrency 4; timeout "30s"; with-reference #true;
//! sample 200; cache ".infermeter/judge-cache.jsonl"; price input="0.15/1M"
//! output="0.60/1M" currency="USD" }` in a data set's `quality` block: an LLM judge
//! (docs/quality.md, "LLM judge"). A rubric file is read here, so a missing one is a
//! diagnostic pointing at the line that names it.

use super::ctx::{Ctx, NodeReader, one_arg};
use super::settings::{Entries, Setting, read_children};
use crate::dataset::{DEFAULT_JUDGE_CACHE, JudgePrice, JudgeSpec, MIN_JUDGE_SAMPLE};

/// The most of a rubric file read.
const MAX_RUBRIC_BYTES: u64 = 1 << 20;

struct JudgeRead {
    url: Option<String>,
    model: Option<String>,
    api_key_env: Option<String>,
    rubric: Option<String>,
    scale: u32,
    concurrency: u32,
    timeout_ms: u64,
    with_reference: bool,
    sample: u32,
    cache: String,
    price: Option<JudgePrice>,
    ok: bool,
}

const SETTINGS: &[Setting<Entries<JudgeRead>>] = &[
    Setting::once("url", |ctx, r, st| {
        let Some(v) = one_arg(
            ctx,
            r,
            "the judge's API base, e.g. \"http://localhost:8001/v1\"",
        ) else {
            st.ok = false;
            return;
        };
        let Some(url) = ctx.string(&v, "url") else {
            st.ok = false;
            return;
        };
        if url == "sim" || url.starts_with("http://") || url.starts_with("https://") {
            st.url = Some(url);
        } else {
            st.ok = false;
            ctx.error(
                v.span,
                "`url` needs an http(s) API base or \"sim\"",
                "not a judge URL",
                Some("write e.g. url \"http://localhost:8001/v1\"".into()),
            );
        }
    }),
    Setting::once("model", |ctx, r, st| {
        st.model = one_arg(ctx, r, "the judge model's name").and_then(|v| ctx.string(&v, "model"));
        st.ok &= st.model.is_some();
    }),
    Setting::once("api-key", |ctx, r, st| {
        st.api_key_env = super::target::api_key_env(ctx, r);
        st.ok &= st.api_key_env.is_some();
    }),
    Setting::once("rubric", |ctx, r, st| {
        st.rubric = rubric(ctx, r);
        st.ok &= st.rubric.is_some();
    }),
    Setting::once("scale", |ctx, r, st| {
        let n =
            one_arg(ctx, r, "the top score, e.g. 5").and_then(|v| ctx.uint(&v, "scale", 2, 100));
        st.scale = n.map_or(0, |n| n as u32);
        st.ok &= n.is_some();
    }),
    Setting::once("concurrency", |ctx, r, st| {
        let n = one_arg(ctx, r, "judge calls at once, e.g. 4")
            .and_then(|v| ctx.uint(&v, "concurrency", 1, 256));
        st.concurrency = n.map_or(0, |n| n as u32);
        st.ok &= n.is_some();
    }),
    Setting::once("timeout", |ctx, r, st| {
        let d = one_arg(ctx, r, "a duration, e.g. \"30s\"")
            .and_then(|v| ctx.positive_duration(&v, "timeout"));
        st.timeout_ms = d.map_or(0, |d| (d.as_millis_f64().ceil() as u64).max(1));
        st.ok &= d.is_some();
    }),
    Setting::once("with-reference", |ctx, r, st| {
        let b = one_arg(ctx, r, "#true or #false").and_then(|v| ctx.boolean(&v, "with-reference"));
        st.with_reference = b.unwrap_or(false);
        st.ok &= b.is_some();
    }),
    Setting::once("sample", |ctx, r, st| {
        let n = one_arg(ctx, r, "answers judged per stage, e.g. 200")
            .and_then(|v| ctx.uint(&v, "sample", MIN_JUDGE_SAMPLE, 100_000));
        st.sample = n.map_or(0, |n| n as u32);
        st.ok &= n.is_some();
    }),
    Setting::once("cache", |ctx, r, st| {
        match one_arg(ctx, r, "a file path").and_then(|v| ctx.string(&v, "cache")) {
            Some(c) if !c.is_empty() => st.cache = c,
            _ => st.ok = false,
        }
    }),
    Setting::once("price", |ctx, r, st| {
        st.price = price(ctx, r);
        st.ok &= st.price.is_some();
    }),
];

/// The judge's spec, or `None` after an error (each reported where it was written).
pub(super) fn parse(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<JudgeSpec> {
    let node = r.node;
    let mut st = JudgeRead {
        url: None,
        model: None,
        api_key_env: None,
        rubric: None,
        scale: 5,
        concurrency: 4,
        timeout_ms: 30_000,
        with_reference: false,
        sample: 200,
        cache: DEFAULT_JUDGE_CACHE.into(),
        price: None,
        ok: true,
    };
    st.ok &= read_children(ctx, r.children(), "`judge`", &[SETTINGS], &mut st);
    for (missing, example) in [
        (st.url.is_none(), "url \"http://localhost:8001/v1\""),
        (st.model.is_none(), "model \"judge-model\""),
        (
            st.rubric.is_none(),
            "rubric \"Is the answer correct and complete?\"",
        ),
    ] {
        if missing && st.ok {
            let what = example.split(' ').next().unwrap_or_default();
            ctx.error(
                ctx.name_span(node),
                format!("`judge` needs a `{what}`"),
                format!("missing `{what}`"),
                Some(format!("write e.g. {example}")),
            );
        }
    }
    let (Some(url), Some(model), Some(rubric), true) = (st.url, st.model, st.rubric, st.ok) else {
        return None;
    };
    let cache_path = Some(ctx.base_dir.clone().unwrap_or_default().join(&st.cache));
    Some(JudgeSpec {
        url,
        model,
        api_key_env: st.api_key_env,
        rubric,
        scale: st.scale,
        concurrency: st.concurrency,
        timeout_ms: st.timeout_ms,
        with_reference: st.with_reference,
        sample: st.sample,
        cache: st.cache,
        cache_path,
        price: st.price,
    })
}

/// The example every price error shows.
const PRICE_EXAMPLE: &str = "price input=\"0.15/1M\" output=\"0.60/1M\"";

/// `price input="0.15/1M" output="0.60/1M" currency="USD"`: both prices, each a
/// non-negative number per million (`/1M`) or per thousand (`/1K`) tokens; `currency`
/// optional, only shown beside the cost.
fn price(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<JudgePrice> {
    if r.arg_count() > 0 {
        let span = r
            .arg(ctx, 0)
            .map_or_else(|| ctx.name_span(r.node), |v| v.span);
        r.skip_args(usize::MAX);
        ctx.error(
            span,
            "`price` takes input= and output=, not an argument",
            "unexpected argument",
            Some(format!("write e.g. {PRICE_EXAMPLE}")),
        );
        return None;
    }
    let mut per_million = |ctx: &mut Ctx<'_>, name: &'static str| {
        let Some(v) = r.prop(ctx, name) else {
            ctx.error(
                ctx.name_span(r.node),
                format!("`price` needs {name}=\"…/1M\""),
                format!("missing {name}="),
                Some(format!(
                    "write both prices, per million tokens: {PRICE_EXAMPLE}"
                )),
            );
            return None;
        };
        per_million_tokens(ctx, &v, name)
    };
    let input = per_million(ctx, "input");
    let output = per_million(ctx, "output");
    let currency = match r.prop(ctx, "currency") {
        Some(v) => Some(currency(ctx, &v)?),
        None => None,
    };
    Some(JudgePrice {
        input_per_million: input?,
        output_per_million: output?,
        currency,
    })
}

/// `"0.15/1M"` (per million tokens) or `"0.15/1K"` (per thousand), as a price per million.
fn per_million_tokens(ctx: &mut Ctx<'_>, v: &super::ctx::Val, name: &str) -> Option<f64> {
    let help = || {
        Some(format!(
            "a price per million tokens is \"0.15/1M\", per thousand \"0.00015/1K\": \
             {PRICE_EXAMPLE}"
        ))
    };
    let Some(text) = (match &v.value {
        kdl::KdlValue::String(s) => Some(s.trim().to_owned()),
        _ => None,
    }) else {
        ctx.error(
            v.span,
            format!("`{name}` needs its unit: a price per million tokens"),
            format!("expected a string like \"0.15/1M\", got {}", v.shown()),
            help(),
        );
        return None;
    };
    let (amount, per) = match text.rsplit_once('/') {
        Some((a, u)) => (a.trim(), u.trim()),
        None => (text.as_str(), ""),
    };
    let scale = match per {
        "1M" | "1m" => 1.0,
        "1K" | "1k" => 1_000.0,
        _ => {
            ctx.error(
                v.span,
                format!("`{name}` needs its unit: /1M or /1K tokens"),
                "no unit",
                help(),
            );
            return None;
        }
    };
    match amount.parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 && (n * scale).is_finite() => Some(n * scale),
        _ => {
            ctx.error(
                v.span,
                format!("`{name}` is no price"),
                "expected a finite number ≥ 0 before the unit",
                help(),
            );
            None
        }
    }
}

/// `currency="USD"`: a short word of printable characters, shown as written.
fn currency(ctx: &mut Ctx<'_>, v: &super::ctx::Val) -> Option<String> {
    let s = ctx.name_string(v, "currency")?;
    let fits = s.chars().count() <= 16 && s.chars().all(|c| !c.is_control() && !c.is_whitespace());
    if !fits {
        ctx.error(
            v.span,
            "`currency` is shown beside the cost: a short word",
            "16 printable characters at most, no spaces",
            Some("write e.g. currency=\"USD\" (or leave it out: a plain number)".into()),
        );
        return None;
    }
    Some(s)
}

/// `rubric "TEXT"` or `rubric file="PATH"` (read now, relative to the scenario's folder).
fn rubric(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<String> {
    let text = if r.arg_count() > 0 {
        let v = one_arg(ctx, r, "the rubric's text")?;
        let s = ctx.string(&v, "rubric")?;
        (s, v.span)
    } else {
        let Some(v) = r.prop(ctx, "file") else {
            ctx.error(
                ctx.name_span(r.node),
                "`rubric` needs its text or file=\"PATH\"",
                "missing rubric",
                Some(
                    "write rubric \"Is the answer correct?\" or rubric file=\"rubric.txt\"".into(),
                ),
            );
            return None;
        };
        let written = ctx.string(&v, "file")?;
        if !ctx.regular_file(&written, v.span, "rubric") {
            return None;
        }
        let path = ctx.base_dir.clone().unwrap_or_default().join(&written);
        match crate::files::read_regular_text(&path, MAX_RUBRIC_BYTES) {
            Ok(text) => (text, v.span),
            Err(e) => {
                let shown: String = written.chars().take(200).collect();
                ctx.error(
                    v.span,
                    format!("cannot read the rubric file `{shown}`: {e}"),
                    "unreadable rubric",
                    Some("name a text file, relative to the scenario's folder".into()),
                );
                return None;
            }
        }
    };
    if text.0.trim().is_empty() {
        ctx.error(text.1, "the rubric is empty", "empty rubric", None);
        return None;
    }
    Some(text.0)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::dataset::{JudgePrice, JudgeSpec};
    use crate::scenario::{ScenarioError, parse_str};

    fn parse(judge: &str) -> Result<Option<JudgeSpec>, ScenarioError> {
        let text = format!(
            "target \"sim\"\ndataset \"d\" {{\n    jsonl \"q.jsonl\"\n    quality {{\n        judge {{\n\
             url \"sim\"; model \"j\"; rubric \"r\"\n{judge}\n        }}\n    }}\n}}\n\
             stage \"s\" {{ dataset \"d\"; arrival \"concurrency\" clients=1; requests 2; }}\n"
        );
        parse_str(Path::new("t.kdl"), &text, &[])
            .map(|s| s.datasets[0].quality.as_ref().and_then(|q| q.judge.clone()))
    }

    /// Each problem's message, label and help.
    fn problems(judge: &str) -> String {
        let e = parse(judge).expect_err("invalid");
        e.problems()
            .iter()
            .map(|p| format!("{} | {} | {:?}\n", p.message, p.label, p.help))
            .collect()
    }

    #[test]
    fn prices_are_read_per_million_tokens_with_their_currency() {
        let j = parse("price input=\"0.15/1M\" output=\"0.0006/1K\" currency=\"USD\"")
            .unwrap()
            .unwrap();
        let p = j.price.unwrap();
        assert_eq!(p.input_per_million, 0.15);
        assert!((p.output_per_million - 0.6).abs() < 1e-12, "{p:?}");
        assert_eq!(p.currency.as_deref(), Some("USD"));
        let j = parse("price input=\"0/1M\" output=\"2/1m\"")
            .unwrap()
            .unwrap();
        assert_eq!(
            j.price,
            Some(JudgePrice {
                input_per_million: 0.0,
                output_per_million: 2.0,
                currency: None
            })
        );
        // No price, no cost.
        assert_eq!(parse("").unwrap().unwrap().price, None);
    }

    #[test]
    fn a_price_without_its_unit_or_below_zero_is_refused_with_a_hint() {
        for (price, said) in [
            (
                "price input=0.15 output=\"0.6/1M\"",
                "`input` needs its unit",
            ),
            (
                "price input=\"0.15\" output=\"0.6/1M\"",
                "`input` needs its unit: /1M or /1K",
            ),
            (
                "price input=\"0.15/1M\" output=\"-1/1M\"",
                "`output` is no price",
            ),
            (
                "price input=\"nan/1M\" output=\"1/1M\"",
                "`input` is no price",
            ),
            (
                "price input=\"inf/1M\" output=\"1/1M\"",
                "`input` is no price",
            ),
            ("price input=\"1/1M\"", "`price` needs output="),
            ("price \"1/1M\"", "not an argument"),
            (
                "price input=\"1/1M\" output=\"1/1M\" currency=\"US D\"",
                "a short word",
            ),
            ("price input=\"1/1M\" output=\"1/1M\" tax=\"1\"", "tax"),
        ] {
            let p = problems(price);
            assert!(p.contains(said), "{price}: {p}");
        }
        let p = problems("price input=\"0.15\" output=\"0.6/1M\"");
        assert!(p.contains("0.15/1M"), "the hint shows the form: {p}");
    }
}
