//! The one line that states a run's outcome, the same in the terminal summary, report.md and
//! the step summary: PASSED, FAILED, INCONCLUSIVE or INTERRUPTED, with what it rests on —
//! never "all passed" above a warning.

use crate::results::Results;
use crate::sla::SlaOutcome;

/// A run's outcome in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headline {
    /// `PASSED`, `FAILED`, `INCONCLUSIVE`, `INTERRUPTED`.
    pub word: &'static str,
    pub icon: &'static str,
    /// What it rests on: `2 of 5 assertions failed, 1 undecided, 1 stage untrusted`.
    pub detail: String,
}

/// The headline of `r`.
pub fn headline(r: &Results) -> Headline {
    // Only the verdicts that gate; a sweep's points past its knee are reported apart.
    let count = |o: SlaOutcome| r.sla.iter().filter(|v| v.gates && v.outcome == o).count();
    let (passed, failed, undecided) = (
        count(SlaOutcome::Pass),
        count(SlaOutcome::Fail),
        count(SlaOutcome::Inconclusive),
    );
    let total = r.sla.iter().filter(|v| v.gates).count();
    let past_knee = r.sla.iter().filter(|v| !v.gates).count();
    let untrusted = r.stages.iter().filter(|s| !s.validity.trusted).count();
    let mut parts = Vec::new();
    match (failed, undecided) {
        (0, 0) if total == 0 => parts.push("no SLA assertions".to_string()),
        (0, 0) => parts.push(format!("all {total} SLA assertions passed")),
        (0, u) => parts.push(format!("{u} of {total} SLA assertions undecided")),
        (f, u) => {
            parts.push(format!("{f} of {total} SLA assertions failed"));
            if u > 0 {
                parts.push(format!("{u} undecided"));
            }
        }
    }
    if undecided > 0 && failed == 0 && passed > 0 {
        parts.push(format!("{passed} passed"));
    }
    if past_knee > 0 {
        let failed = r
            .sla
            .iter()
            .filter(|v| !v.gates && v.outcome == SlaOutcome::Fail)
            .count();
        let noun = if past_knee == 1 {
            "verdict"
        } else {
            "verdicts"
        };
        parts.push(format!(
            "{past_knee} {noun} past a sweep's knee reported, not gating ({failed} failed)"
        ));
    }
    match untrusted {
        0 => {}
        1 => parts.push("1 stage untrusted".into()),
        n => parts.push(format!("{n} stages untrusted")),
    }
    if r.outcome == SlaOutcome::Pass && undecided > 0 {
        parts.push("undecided ones counted as passed".into());
    }
    if r.outcome == SlaOutcome::Fail && failed == 0 {
        parts.push("undecided ones counted as failed".into());
    }
    let detail = parts.join(", ");
    if r.interrupted {
        let why = r.error.clone().unwrap_or_else(|| "stopped early".into());
        return Headline {
            word: "INTERRUPTED",
            icon: "⏹️",
            detail: format!("{why}; {detail}"),
        };
    }
    let (word, icon) = match r.outcome {
        SlaOutcome::Pass => ("PASSED", if untrusted > 0 { "⚠️" } else { "✅" }),
        SlaOutcome::Fail => ("FAILED", "❌"),
        SlaOutcome::Inconclusive => ("INCONCLUSIVE", "❔"),
    };
    Headline { word, icon, detail }
}

/// The mark of an outcome given as its word (`pass`, `fail`, `inconclusive`).
pub fn mark_word(word: &str) -> &'static str {
    match word {
        "pass" => mark(SlaOutcome::Pass),
        "fail" => mark(SlaOutcome::Fail),
        _ => mark(SlaOutcome::Inconclusive),
    }
}

/// The mark of one verdict: ✓ pass, ✗ fail, ? inconclusive.
pub fn mark(outcome: SlaOutcome) -> &'static str {
    match outcome {
        SlaOutcome::Pass => "✓",
        SlaOutcome::Fail => "✗",
        SlaOutcome::Inconclusive => "?",
    }
}

/// What a verdict that observed no value shows in place of its number: "no successful
/// request" when its stage had none, else "no sample". `None` when it observed one. Its
/// `observed` is then a placeholder 0 that must never read as a measurement.
pub fn absence(r: &Results, v: &crate::sla::SlaVerdict) -> Option<&'static str> {
    if !v.unobserved {
        return None;
    }
    let stage = v
        .stage
        .as_deref()
        .and_then(|name| r.stages.iter().find(|s| s.name == name));
    Some(match stage {
        Some(s) if s.requests.sent > 0 && s.requests.ok == 0 => "no successful request",
        _ => "no sample",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results() -> Results {
        serde_json::from_str(include_str!(
            "../../../../tests/data/results/sim-quickstart.json"
        ))
        .unwrap()
    }

    #[test]
    fn a_verdict_that_observed_nothing_says_why_not_zero() {
        let mut r = results();
        assert_eq!(absence(&r, &r.sla[0]), None, "observed: a number");
        // A stage that answered requests but has no sample of the metric (or no window).
        r.sla[0].unobserved = true;
        assert_eq!(absence(&r, &r.sla[0]), Some("no sample"));
        // A stage where every request failed.
        r.stages[0].requests.ok = 0;
        assert_eq!(absence(&r, &r.sla[0]), Some("no successful request"));
        let text = super::super::render_summary_text(&r);
        let line = text.lines().find(|l| l.contains("ttft.p95")).unwrap();
        assert!(line.contains("no successful request") && !line.contains("observed"));
    }
}
