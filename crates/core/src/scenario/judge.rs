//! `judge { url "http://…/v1"; model "…"; api-key env="JUDGE_KEY"; rubric "…" (or
//! `rubric file="rubric.txt"`); scale 5; concurrency 4; timeout "30s"; with-reference #true;
//! sample 200; cache ".infermeter/judge-cache.jsonl" }` in a data set's `quality` block: an
//! LLM judge (docs/quality.md, "LLM judge"). A rubric file is read here, so a missing one is a
//! diagnostic pointing at the line that names it.

use super::ctx::{Ctx, NodeReader, one_arg};
use super::settings::{Entries, Setting, read_children};
use crate::dataset::{DEFAULT_JUDGE_CACHE, JudgeSpec, MIN_JUDGE_SAMPLE};

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
    })
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
