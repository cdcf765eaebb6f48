//! `compare`'s agreement of two runs' answers (docs/quality.md, "Agreement with a baseline"):
//! each run's `answers.jsonl` beside its `results.json`, paired by prompt when both runs
//! applied the same plan, and what that does to the verdict: a paired accuracy change shown
//! worse is a regression, one undecided is an undecided metric, and `--min-agreement` gates
//! the share of identical answers.

use std::path::Path;

use crate::error::Error;
use crate::metrics::{Agreement, CountMetric, Metric, PairingRules, agreement, read_answers};
use crate::report::{ANSWERS_FILE, Comparison, Flagged, p_value};
use crate::results::Results;

/// The two runs' agreement, when either kept its answers; `None` when neither did.
pub(super) fn agreement_of(
    (base_path, base): (&Path, &Results),
    (cur_path, cur): (&Path, &Results),
    confidence: f64,
    tolerance: f64,
) -> Result<Option<Agreement>, Error> {
    let rows = |p: &Path| {
        let file = p.parent().unwrap_or(Path::new(".")).join(ANSWERS_FILE);
        read_answers(&file).map_err(|e| {
            Error::usage(
                infermeter_words::error_chain(&e),
                "compare the answers.jsonl a run wrote beside its results.json",
            )
        })
    };
    let unpaired = |reason: String| Ok(Some(Agreement::Unpaired { reason }));
    let (b, c) = (rows(base_path)?, rows(cur_path)?);
    let (b, c) = match (b, c) {
        (None, None) => return Ok(None),
        (Some(b), Some(c)) => (b, c),
        (None, Some(_)) => return unpaired("the baseline kept no answers (answers.jsonl)".into()),
        (Some(_), None) => {
            return unpaired("the current run kept no answers (answers.jsonl)".into());
        }
    };
    if base.plan_hash != cur.plan_hash {
        return unpaired(format!(
            "the runs used different plans (baseline {} vs current {}), so their answers are \
             not to the same prompts",
            base.plan_hash, cur.plan_hash
        ));
    }
    let similarity = |a: &str, b: &str| crate::dataset::rouge_l(a, &[b.to_string()]);
    let rules = PairingRules {
        confidence,
        tolerance,
        similarity: &similarity,
    };
    Ok(Some(agreement(&b, &c, &rules)))
}

/// Adds the agreement's verdicts to the comparison's: a paired accuracy change shown worse
/// to its regressions, one undecided to its undecided metrics; with `min_agreement`, a share
/// of identical answers shown under it is a regression, one that may be under it undecided.
pub(super) fn flag(c: &mut Comparison, a: &Agreement, min_agreement: Option<f64>) {
    let Agreement::Paired { stages } = a else {
        return;
    };
    let flagged = |stage: &str, change: String| Flagged {
        stage: stage.to_string(),
        metric: Metric::Count(CountMetric::Accuracy),
        aggregation: None,
        change,
    };
    for s in stages {
        if let Some(p) = &s.accuracy {
            let change = format!(
                "paired {:+.1} pts [{:+.1}, {:+.1}], McNemar {}",
                p.change * 100.0,
                p.low * 100.0,
                p.high * 100.0,
                p_value(p.p_value)
            );
            match p.verdict {
                "worse" => c.regressions.push(flagged(&s.stage, change)),
                "undecided" => c.undecided.push(flagged(&s.stage, change)),
                _ => {}
            }
        }
        let Some(min) = min_agreement else { continue };
        let change = format!(
            "identical answers {:.1} % [{:.1}, {:.1}], --min-agreement {:.1} %",
            s.identical_share * 100.0,
            s.identical_low * 100.0,
            s.identical_high * 100.0,
            min * 100.0
        );
        if s.identical_high < min {
            c.regressions.push(flagged(&s.stage, change));
        } else if s.identical_low < min {
            c.undecided.push(flagged(&s.stage, change));
        }
    }
}

/// `--min-agreement` gates a figure that must exist: without both runs' answers paired, it is
/// refused (exit 2) rather than passed unmeasured.
pub(super) fn gateable(a: Option<&Agreement>, min_agreement: Option<f64>) -> Result<(), Error> {
    let why = match (min_agreement, a) {
        (None, _) | (Some(_), Some(Agreement::Paired { .. })) => return Ok(()),
        (Some(_), None) => "neither run kept its answers (answers.jsonl)".to_string(),
        (Some(_), Some(Agreement::Unpaired { reason })) => reason.clone(),
    };
    Err(Error::usage(
        format!("--min-agreement needs the two runs' answers paired by prompt: {why}"),
        "run the same scenario (a data set with a `quality` block) for both, and keep each \
         run's answers.jsonl beside its results.json",
    ))
}
