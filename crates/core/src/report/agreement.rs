//! `compare`'s agreement section (docs/quality.md, "Agreement with a baseline"): per stage,
//! the share of identical answers, their mean similarity, and the paired change of accuracy,
//! as text and as Markdown. The answers themselves are never shown: only counts and shares.

use std::fmt::Write as _;

use crate::escape;
use crate::metrics::{Agreement, StageAgreement};

/// A p-value as the outputs show it: `p = ` and three decimals, a tiny one as `p < 0.001`.
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".to_string()
    } else {
        format!("p = {p:.3}")
    }
}

// Writing to a `String` cannot fail: the `fmt::Result`s below are dropped.

/// The agreement as the terminal shows it, after the comparison.
pub fn render_agreement_text(a: &Agreement) -> String {
    let mut out = String::from("\nagreement with the baseline (answers paired by prompt):\n");
    match a {
        Agreement::Unpaired { reason } => {
            let _ = writeln!(out, "  answers cannot be paired: {reason}");
        }
        Agreement::Paired { stages } => {
            for s in stages {
                let _ = writeln!(out, "  {}", line(s));
            }
        }
    }
    out
}

/// The agreement as a Markdown section, after the comparison.
pub fn render_agreement_markdown(a: &Agreement) -> String {
    let mut out = String::from("\n### Agreement with the baseline\n\n");
    match a {
        Agreement::Unpaired { reason } => {
            let _ = writeln!(
                out,
                "Answers cannot be paired: {}",
                escape::markdown(reason)
            );
        }
        Agreement::Paired { stages } => {
            out.push_str(
                "| stage | paired | identical | similarity (ROUGE-L) | accuracy change (paired) | verdict |\n\
                 | --- | --- | --- | --- | --- | --- |\n",
            );
            for s in stages {
                let (change, verdict) = accuracy(s);
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {:.3} | {change} | {verdict} |",
                    escape::markdown(&s.stage),
                    s.paired,
                    identical(s),
                    s.similarity
                );
            }
        }
    }
    out
}

fn line(s: &StageAgreement) -> String {
    let (change, verdict) = accuracy(s);
    format!(
        "{}: {} paired · identical {} · similarity {:.3} · accuracy {change} {verdict}",
        s.stage,
        s.paired,
        identical(s),
        s.similarity
    )
}

fn identical(s: &StageAgreement) -> String {
    format!(
        "{:.1} % [{:.1}, {:.1}] ({} of {})",
        s.identical_share * 100.0,
        s.identical_low * 100.0,
        s.identical_high * 100.0,
        s.identical,
        s.paired
    )
}

/// The paired change of accuracy and its verdict; `n/a` when no prompt was scored in both.
fn accuracy(s: &StageAgreement) -> (String, &'static str) {
    let Some(p) = &s.accuracy else {
        return ("n/a (no prompt scored in both runs)".to_string(), "");
    };
    (
        format!(
            "{:.1} % → {:.1} %, {:+.1} pts [{:+.1}, {:+.1}] (lost {}, gained {}, McNemar {})",
            p.baseline * 100.0,
            p.current * 100.0,
            p.change * 100.0,
            p.low * 100.0,
            p.high * 100.0,
            p.lost,
            p.gained,
            p_value(p.p_value)
        ),
        p.verdict,
    )
}
