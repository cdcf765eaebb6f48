//! The gate's side of the priority check (`priority-inversion "fail"` on a stage): each pair
//! of classes whose intervals show the one told to go first served slower becomes a verdict
//! of its own, an assertion that the higher class's figure is at most the lower class's upper
//! bound, judged like any other (so the interval, the trust rule and the gate all apply).

use super::evaluate::{Context, judge_one};
use super::verdict::SlaVerdict;
use crate::metrics::{PairOutcome, StageSummary};

/// A failed verdict for every inverted pair of classes on a stage whose priority check gates.
pub fn priority_inversions(stages: &[StageSummary], cx: &Context<'_>) -> Vec<SlaVerdict> {
    let mut out = Vec::new();
    for stage in stages {
        let Some(check) = stage.priority.as_ref().filter(|c| c.gates) else {
            continue;
        };
        for p in check
            .pairs
            .iter()
            .filter(|p| p.outcome == PairOutcome::Inverted)
        {
            let Some((_, bound)) = p.lower_interval else {
                continue;
            };
            let text = format!(
                "{}.{}[class={}] <= {:.3}ms",
                check.metric, p.figure, p.higher, bound
            );
            let Ok(assertion) = super::parse(&text) else {
                continue;
            };
            let mut v = judge_one(&assertion, stage, cx);
            let why = format!(
                "priority inversion: class `{}` was told to go before `{}` but was served \
                 slower ({} {} {:.1} ms against {:.1} ms, intervals apart)",
                p.higher, p.lower, check.metric, p.figure, p.higher_ms, p.lower_ms
            );
            v.note = Some(match v.note.take() {
                Some(n) => format!("{why}; {n}"),
                None => why,
            });
            out.push(v);
        }
    }
    out
}
