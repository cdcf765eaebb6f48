//! A stage's answer quality (results.json's `quality`) as the reports show it: one line
//! under the stage's row in the terminal summary, a table beside throughput in the Markdown
//! and HTML reports, and the warning that `ignore_eos` cut every answer.

use super::view_rows::KeyValue;
use crate::metrics::{JudgeTally, Quality, StageSummary};

/// "quality (number): accuracy 94.3 % [91.1, 96.4] of 300 scored · repetitive 2 · empty 0 ·
/// cut 2 of 300 checked", for the terminal summary.
pub(crate) fn sentence(s: &StageSummary) -> Option<String> {
    let q = s.quality.as_ref()?;
    let mut parts = Vec::new();
    if let Some(a) = accuracy(q) {
        parts.push(format!("accuracy {a}"));
    }
    if let Some(j) = judge(q) {
        parts.push(format!("judge {j}"));
    }
    if let Some(a) = agreement(q) {
        // Its reason may quote a path from a results file: printable text only.
        parts.push(format!("agreement {}", crate::escape::terminal(&a)));
    }
    parts.push(format!("repetitive {}", q.repetitive));
    parts.push(format!("empty {}", q.empty));
    parts.push(format!("cut {}", q.cut));
    if q.refusals > 0 {
        parts.push(format!("refusals {}", q.refusals));
    }
    if q.banded > 0 {
        parts.push(format!("outside token band {} of {}", q.off_band, q.banded));
    }
    if q.clipped > 0 {
        parts.push(format!("scored on their first 64 KiB {}", q.clipped));
    }
    let scorer = q
        .scorer
        .as_deref()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    Some(format!(
        "quality{scorer}: {} of {} checked",
        parts.join(" · "),
        q.checked
    ))
}

/// The warning for answers the target kept from ending (`ignore_eos`).
pub(crate) fn warning(s: &StageSummary) -> Option<&'static str> {
    s.quality.as_ref().filter(|q| q.ignore_eos).map(|_| {
        "answers cut: the target sends ignore_eos, so the model could not end its answers and \
         each ran to max_tokens; set ignore-eos #false on a target scored for quality"
    })
}

/// "94.33 % [91.11, 96.43] (283 of 300 scored)"; `None` before any answer was scored.
fn accuracy(q: &Quality) -> Option<String> {
    let a = q.accuracy?;
    let interval = q
        .accuracy_interval
        .map(|[low, high]| format!(" [{:.2}, {:.2}]", low * 100.0, high * 100.0))
        .unwrap_or_default();
    Some(format!(
        "{:.2} %{interval} ({} of {} scored)",
        a * 100.0,
        q.correct,
        q.scored
    ))
}

/// "97.50 % [92.9, 99.1] (117 of 120 paired)", or why none was paired ("unpaired: the
/// baseline kept no answers …"); `None` without a baseline.
fn agreement(q: &Quality) -> Option<String> {
    let a = q.agreement.as_ref()?;
    let Some(share) = a.share else {
        let why = a.unpaired.as_deref().unwrap_or("no answer paired");
        return Some(format!("unpaired ({why})"));
    };
    let interval = a
        .interval
        .map(|[low, high]| format!(" [{:.2}, {:.2}]", low * 100.0, high * 100.0))
        .unwrap_or_default();
    Some(format!(
        "{:.2} %{interval} ({} of {} paired identical)",
        share * 100.0,
        a.identical,
        a.paired
    ))
}

/// "4.60 of 5 [4.26, 4.94] (50 scored, 0 failed; 50 calls, 0 cached, 4872 + 100 tokens,
/// cost 0.000791 USD)": the judge's scores, never its words, and its cost where the scenario
/// priced it; `None` without a judge.
fn judge(q: &Quality) -> Option<String> {
    let j = q.judge.as_ref()?;
    let cost = cost(j).map(|c| format!(", cost {c}")).unwrap_or_default();
    Some(format!(
        "{} ({} scored, {} failed; {} calls, {} cached, {} + {} tokens{cost})",
        judge_score(j),
        j.scored,
        j.failures,
        j.calls,
        j.cache_hits,
        j.prompt_tokens,
        j.completion_tokens
    ))
}

/// "4.60 of 5 [4.26, 4.94]", "– of 5" before any score.
fn judge_score(j: &JudgeTally) -> String {
    let mean = j.mean.map_or_else(|| "–".into(), |m| format!("{m:.2}"));
    let interval = j
        .interval
        .map(|[low, high]| format!(" [{low:.2}, {high:.2}]"))
        .unwrap_or_default();
    format!("{mean} of {}{interval}", j.scale)
}

/// "0.00179 USD", "0.00179" without a currency; `None` where no price was given.
pub(crate) fn cost(j: &JudgeTally) -> Option<String> {
    let c = j.cost.as_ref()?;
    let unit = c
        .currency
        .as_deref()
        .map(|u| format!(" {}", crate::escape::terminal(u)))
        .unwrap_or_default();
    Some(format!("{}{unit}", money(c.total)))
}

/// A cost as short as it reads and no shorter: 2 decimals from 1 on, else 3 significant
/// digits (`0.00179`), `0` for nothing.
fn money(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if v >= 1.0 {
        return format!("{v:.2}");
    }
    let decimals = (2 - v.log10().floor() as i32).clamp(2, 12) as usize;
    let s = format!("{v:.decimals$}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One label's quality, for its row of the stage's split table: "accuracy 94.33 % [91.11,
/// 96.43] (283 of 300 scored)" and "judge 4.52 of 5 [4.26, 4.78] (48 scored)", each empty
/// where not measured.
pub(crate) fn label_cells(q: Option<&Quality>) -> (String, String) {
    let Some(q) = q else {
        return (String::new(), String::new());
    };
    let judged = q.judge.as_ref().map_or_else(String::new, |j| {
        let cost = cost(j).map(|c| format!(", cost {c}")).unwrap_or_default();
        format!("{} ({} scored{cost})", judge_score(j), j.scored)
    });
    (accuracy(q).unwrap_or_default(), judged)
}

/// The rows of the reports' answer-quality table (empty when the stage checks none).
pub(crate) fn rows(s: &StageSummary) -> Vec<KeyValue> {
    let Some(q) = &s.quality else {
        return Vec::new();
    };
    let share = |n: u64| match q.share_of_checked(n) {
        Some(p) => format!("{n} ({p:.2} %)"),
        None => n.to_string(),
    };
    let mut rows = vec![KeyValue {
        key: "scorer",
        value: q.scorer.clone().unwrap_or_else(|| "none".into()),
    }];
    if let Some(a) = accuracy(q) {
        rows.push(KeyValue {
            key: "accuracy",
            value: a,
        });
    }
    if let Some(j) = judge(q) {
        rows.push(KeyValue {
            key: "judge score",
            value: j,
        });
    }
    if let Some(a) = agreement(q) {
        rows.push(KeyValue {
            key: "agreement with the baseline",
            value: a,
        });
    }
    rows.push(KeyValue {
        key: "answers checked",
        value: q.checked.to_string(),
    });
    for (key, n) in [
        ("repetitive", q.repetitive),
        ("empty", q.empty),
        ("cut at max_tokens", q.cut),
        ("refusals", q.refusals),
    ] {
        rows.push(KeyValue {
            key,
            value: share(n),
        });
    }
    if q.banded > 0 {
        rows.push(KeyValue {
            key: "outside the token band",
            value: format!("{} of {}", q.off_band, q.banded),
        });
    }
    if q.clipped > 0 {
        rows.push(KeyValue {
            key: "scored on their first 64 KiB",
            value: q.clipped.to_string(),
        });
    }
    if let Some(w) = warning(s) {
        rows.push(KeyValue {
            key: "warning",
            value: w.to_string(),
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cost_reads_short_and_is_shown_only_when_priced() {
        assert_eq!(money(0.001_790_4), "0.00179");
        assert_eq!(money(0.0069), "0.0069");
        assert_eq!(money(12.345), "12.35");
        assert_eq!(money(0.5), "0.5");
        assert_eq!(money(0.0), "0");
        let mut j = JudgeTally::default();
        assert_eq!(cost(&j), None);
        j.cost = Some(crate::metrics::JudgeCost {
            total: 0.0069,
            currency: Some("USD".into()),
            ..Default::default()
        });
        assert_eq!(cost(&j).as_deref(), Some("0.0069 USD"));
    }
}
