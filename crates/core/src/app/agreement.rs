//! `compare`'s agreement of two runs' answers (docs/quality.md, "Agreement with a baseline"):
//! each run's `answers.jsonl` beside its `results.json`, paired by prompt when both runs
//! applied the same plan, and what that does to the verdict: a paired accuracy change shown
//! worse is a regression, one undecided is an undecided metric, and `--min-agreement` gates
//! the share of identical answers. And a run's own `agreement` with the answers of its
//! scenario's baseline (`report { baseline … }`): each answer marked as it is judged, and a
//! stage left unpaired said why.

use std::path::Path;
use std::sync::Arc;

use crate::error::Error;
use crate::metrics::{
    Agreement, AgreementTally, AnswerIndex, CountMetric, Metric, PairingRules, StageSummary,
    agreement, read_answers,
};
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

/// A run's baseline answers, for its `agreement`: indexed by prompt, or why there are none to
/// pair with.
pub(super) enum BaselineAnswers {
    Index(Arc<AnswerIndex>),
    Unpaired(String),
}

impl BaselineAnswers {
    /// The answers of the baseline at `path` (its `answers.jsonl` beside it), when the plan
    /// judges answers; `None` for a plan that judges none. A file that exists and does not
    /// read is an error (exit 2), as an unreadable baseline is.
    ///
    /// The plans need not hash the same (the baseline run rarely asserts `agreement`, and a
    /// plan's hash holds its SLAs): an answer pairs where the baseline answered the same
    /// stage, request index and turn with the same data set record.
    pub(super) fn read(
        path: &Path,
        plan: &crate::plan::Plan,
    ) -> Result<Option<BaselineAnswers>, Error> {
        if plan.datasets.iter().all(|d| d.quality.is_none()) {
            return Ok(None);
        }
        let file = path.parent().unwrap_or(Path::new(".")).join(ANSWERS_FILE);
        let rows = read_answers(&file).map_err(|e| {
            Error::usage(
                infermeter_words::error_chain(&e),
                "give the baseline run's answers.jsonl, as it wrote it, beside its results.json",
            )
        })?;
        let Some(rows) = rows else {
            return Ok(Some(BaselineAnswers::Unpaired(format!(
                "the baseline kept no answers: there is no {}",
                file.display()
            ))));
        };
        Ok(Some(BaselineAnswers::Index(Arc::new(AnswerIndex::new(
            rows,
        )))))
    }

    /// The index the runner marks answers against, when the answers pair.
    pub(super) fn index(&self) -> Option<Arc<AnswerIndex>> {
        match self {
            BaselineAnswers::Index(i) => Some(i.clone()),
            BaselineAnswers::Unpaired(_) => None,
        }
    }

    /// Says, on each stage that checked answers and paired none (with its labels' parts),
    /// why: the baseline's answers could not be paired, or it answered none of the stage's
    /// prompts.
    pub(super) fn note_unpaired(&self, stages: &mut [StageSummary]) {
        let why = |stage: &str| match self {
            BaselineAnswers::Unpaired(why) => why.clone(),
            BaselineAnswers::Index(_) => format!(
                "the baseline answered none of stage `{stage}`'s prompts, which pair by stage, \
                 request index and data set record"
            ),
        };
        for s in stages {
            let reason = why(&s.name);
            let parts = std::iter::once(&mut s.quality)
                .chain(s.groups.iter_mut().map(|g| &mut g.summary.quality));
            for q in parts.flatten() {
                if q.agreement.as_ref().is_none_or(|a| a.paired == 0) {
                    q.agreement = Some(AgreementTally {
                        unpaired: Some(reason.clone()),
                        ..AgreementTally::default()
                    });
                }
            }
        }
    }
}
