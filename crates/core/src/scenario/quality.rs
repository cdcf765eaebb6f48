//! `quality { score "number" tolerance=0.01; repetition ngram=4 share=0.5; refusal "I can't";
//! tokens-band 0.1 }` in a dataset: how its answers are scored against their records'
//! references, and which checks that need no reference run (docs/quality.md). A regex is
//! compiled here, so a bad one is a diagnostic pointing into its string.

use infermeter_words::metrics::SCORERS;
use kdl::KdlNode;

use super::ctx::{Ctx, NodeReader, Val, one_arg};
use super::error::suggest;
use super::settings::{Entries, Setting, read_children};
use crate::dataset::{JsonTop, QualitySpec, RepetitionSpec, ScoreSpec};

const CHILDREN: &[Setting<Entries<QualityRead>>] = &[
    Setting::once("score", |ctx, r, st| {
        st.spec.score = score(ctx, r);
        st.ok &= st.spec.score.is_some();
    }),
    Setting::once("repetition", |ctx, r, st| {
        let ngram = match r.prop(ctx, "ngram") {
            Some(v) => ctx.uint(&v, "ngram", 1, 64).map(|n| n as u32),
            None => Some(4),
        };
        let share = r.prop(ctx, "share");
        let share = fraction(ctx, share, "share", 0.5);
        match (ngram, share) {
            (Some(ngram), Some(share)) => {
                st.spec.repetition = Some(RepetitionSpec { ngram, share })
            }
            _ => st.ok = false,
        }
    }),
    Setting::once("refusal", |ctx, r, st| {
        let markers = r.args_from(ctx, 0);
        if markers.is_empty() {
            st.spec.refusal = DEFAULT_REFUSALS.iter().map(|s| s.to_string()).collect();
        }
        for v in markers {
            match ctx.name_string(&v, "refusal marker") {
                Some(m) => st.spec.refusal.push(m),
                None => st.ok = false,
            }
        }
    }),
    Setting::once("judge", |ctx, r, st| {
        st.spec.judge = super::judge::parse(ctx, r);
        st.ok &= st.spec.judge.is_some();
    }),
    Setting::once("tokens-band", |ctx, r, st| {
        let band = one_arg(ctx, r, "a fraction, e.g. 0.1 for ±10 %")
            .and_then(|v| ctx.number_min(&v, "tokens-band", 0.0, true));
        st.spec.tokens_band = band;
        st.ok &= band.is_some();
    }),
];

/// `refusal` without markers: the phrases chat models most often refuse with.
const DEFAULT_REFUSALS: [&str; 5] = [
    "I can't",
    "I cannot",
    "I'm sorry, but",
    "I am unable to",
    "As an AI",
];

struct QualityRead {
    spec: QualitySpec,
    ok: bool,
}

/// The block's spec, or `None` after an error.
pub(crate) fn parse(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<QualitySpec> {
    let mut r = NodeReader::new(ctx, node);
    let mut st = QualityRead {
        spec: QualitySpec::default(),
        ok: true,
    };
    st.ok &= read_children(ctx, r.children(), "`quality`", &[CHILDREN], &mut st);
    r.finish(ctx);
    st.ok.then_some(st.spec)
}

/// A share in (0, 1], `default` when not written.
fn fraction(ctx: &mut Ctx<'_>, v: Option<Val>, what: &str, default: f64) -> Option<f64> {
    let Some(v) = v else {
        return Some(default);
    };
    let n = ctx.number_min(&v, what, 0.0, true)?;
    if n > 1.0 {
        ctx.error(
            v.span,
            format!("`{what}` out of range"),
            format!("a share between 0 and 1, got {n}"),
            Some("write e.g. 0.5 for half".into()),
        );
        return None;
    }
    Some(n)
}

/// `score "KIND" …`: the scorer and the properties its kind takes.
fn score(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<ScoreSpec> {
    let v = one_arg(ctx, r, "a scorer, e.g. \"exact\"")?;
    let kind = ctx.name_string(&v, "scorer")?;
    let spec = match kind.as_str() {
        "exact" => ScoreSpec::Exact,
        "contains" => ScoreSpec::Contains,
        "choice" => ScoreSpec::Choice,
        "regex" => ScoreSpec::Regex {
            pattern: pattern(ctx, r)?,
        },
        "number" => {
            let mut tol = |name: &'static str| match r.prop(ctx, name) {
                Some(v) => ctx.number_min(&v, name, 0.0, false),
                None => Some(0.0),
            };
            let (tolerance, relative) = (tol("tolerance"), tol("relative"));
            ScoreSpec::Number {
                tolerance: tolerance?,
                relative: relative?,
            }
        }
        "json" => ScoreSpec::Json {
            top: json_top(ctx, r)?,
        },
        "rouge-l" => {
            let threshold = r.prop(ctx, "threshold");
            ScoreSpec::RougeL {
                threshold: fraction(ctx, threshold, "threshold", 0.5)?,
            }
        }
        other => {
            ctx.error(
                v.span,
                format!("unknown scorer `{other}`"),
                format!("expected one of {}", SCORERS.join(", ")),
                Some(suggest(other, &SCORERS, "scorer")),
            );
            return None;
        }
    };
    Some(spec)
}

/// `pattern="…"`, compiled now so that a bad one points at its string.
fn pattern(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<String> {
    let Some(v) = r.prop(ctx, "pattern") else {
        ctx.error(
            ctx.name_span(r.node),
            "`score \"regex\"` needs a pattern",
            "missing `pattern=`",
            Some("write e.g. score \"regex\" pattern=\"^ANSWER: (\\\\w+)\"".into()),
        );
        return None;
    };
    let text = ctx.string(&v, "pattern")?;
    if let Err(e) = regex::Regex::new(&text) {
        ctx.error(
            v.span,
            "invalid regular expression",
            e.to_string(),
            Some("the syntax is Rust's regex crate's (no look-around, no backreferences)".into()),
        );
        return None;
    }
    Some(text)
}

/// `type="object"` (the default), `"array"` or `"any"`.
fn json_top(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<JsonTop> {
    let Some(v) = r.prop(ctx, "type") else {
        return Some(JsonTop::Object);
    };
    let name = ctx.name_string(&v, "type")?;
    match name.as_str() {
        "object" => Some(JsonTop::Object),
        "array" => Some(JsonTop::Array),
        "any" => Some(JsonTop::Any),
        other => {
            ctx.error(
                v.span,
                format!("unknown JSON type `{other}`"),
                "expected \"object\", \"array\" or \"any\"",
                Some(suggest(other, &["object", "array", "any"], "type")),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::dataset::{JsonTop, QualitySpec, RepetitionSpec, ScoreSpec};
    use crate::scenario::{ScenarioError, parse_str};

    fn parse(quality: &str) -> Result<Option<QualitySpec>, ScenarioError> {
        let text = format!(
            "target \"sim\"\ndataset \"d\" {{ synthetic {{ input-tokens 8; output-tokens 4; }}\n\
             quality {{ {quality} }} }}\n\
             stage \"s\" {{ dataset \"d\"; arrival \"concurrency\" clients=1; requests 2; }}\n"
        );
        parse_str(Path::new("t.kdl"), &text, &[]).map(|s| s.datasets[0].quality.clone())
    }

    fn problems(quality: &str) -> String {
        let e = parse(quality).expect_err("invalid");
        e.problems()
            .iter()
            .map(|p| format!("{} | {} | {:?}\n", p.message, p.label, p.help))
            .collect()
    }

    #[test]
    fn each_setting_is_read_with_its_defaults() {
        let q =
            parse("score \"number\" tolerance=0.5; repetition; refusal \"nope\"; tokens-band 0.1")
                .unwrap()
                .unwrap();
        assert_eq!(
            q.score,
            Some(ScoreSpec::Number {
                tolerance: 0.5,
                relative: 0.0
            })
        );
        assert_eq!(
            q.repetition,
            Some(RepetitionSpec {
                ngram: 4,
                share: 0.5
            })
        );
        assert_eq!(q.refusal, ["nope"]);
        assert_eq!(q.tokens_band, Some(0.1));
        let q = parse("score \"json\"; refusal").unwrap().unwrap();
        assert_eq!(
            q.score,
            Some(ScoreSpec::Json {
                top: JsonTop::Object
            })
        );
        assert!(q.refusal.len() > 2, "the default markers");
        let q = parse("score \"rouge-l\" threshold=0.3").unwrap().unwrap();
        assert_eq!(q.score, Some(ScoreSpec::RougeL { threshold: 0.3 }));
        assert_eq!(parse("").unwrap(), Some(QualitySpec::default()));
    }

    #[test]
    fn each_way_to_get_it_wrong_is_named() {
        for (quality, said) in [
            (
                "score \"regex\" pattern=\"(\"",
                "invalid regular expression",
            ),
            ("score \"regex\"", "needs a pattern"),
            ("score \"exakt\"", "did you mean"),
            ("score \"json\" type=\"tuple\"", "unknown JSON type"),
            ("score \"number\" tolerance=-1", "out of range"),
            ("score \"exact\" pattern=\"x\"", "pattern"),
            ("repetition share=2", "a share between 0 and 1"),
            ("repetition ngram=0", "ngram"),
            ("tokens-band 0", "out of range"),
            ("score \"exact\"; score \"choice\"", "score"),
            ("scor \"exact\"", "did you mean `score`"),
        ] {
            let p = problems(quality);
            assert!(p.contains(said), "{quality}: {p}");
        }
    }
}
