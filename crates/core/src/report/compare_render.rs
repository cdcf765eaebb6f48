//! A comparison rendered: as Markdown through `templates/compare.md.j2` (or the user's
//! template), and as a plain-text table for terminals. Kept apart from `compare.rs`, which
//! decides the verdicts, so that the renderers read only the finished [`Comparison`].

use std::fmt::Write;

use minijinja::value::Serde;
use minijinja::{Value, context};

use super::ReportError;
use super::compare::{Comparison, StageComparison, Trend};
use super::markdown::COMPARE_TEMPLATE;
use super::numbers::{num, short};
use super::templates::environment;

/// Renders a comparison (and a trend, when there is one) through `templates/compare.md.j2` (or
/// `template`).
pub fn render_compare_markdown(
    c: &Comparison,
    trend: Option<&Trend>,
    template: Option<&str>,
) -> Result<String, ReportError> {
    let mut env = environment();
    env.add_template_owned(
        "compare.md",
        template.unwrap_or(COMPARE_TEMPLATE).to_string(),
    )?;
    let trend_rows: Vec<(String, String, Vec<String>)> = trend
        .map(|t| {
            t.rows
                .iter()
                .map(|r| {
                    let cells = r
                        .values
                        .iter()
                        .map(|v| v.map_or("–".to_string(), num))
                        .collect();
                    (r.stage.clone(), r.metric.clone(), cells)
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(env.get_template("compare.md")?.render(context! {
        cmp => Value::from(Serde(c)),
        tolerance => short(c.tolerance_pct),
        confidence => short(c.confidence * 100.0),
        trend_runs => trend.map(|t| t.runs.clone()).unwrap_or_default(),
        trend_rows => trend_rows,
    })?)
}

/// A plain-text table for terminals, its columns as wide as their widest cell.
pub fn render_compare_text(c: &Comparison, trend: Option<&Trend>) -> String {
    let mut out = String::new();
    write_heading(&mut out, c);
    for s in &c.stages {
        write_stage(&mut out, s);
    }
    write_urls(&mut out, c);
    write_conclusions(&mut out, c);
    if let Some(t) = trend {
        write_trend(&mut out, t);
    }
    out
}

// Writing to a `String` cannot fail: the `fmt::Result`s below are dropped.

/// The verdict line, and a warning when the two runs did not run the same plan.
fn write_heading(out: &mut String, c: &Comparison) {
    let verdict = if c.regressed() {
        "REGRESSED"
    } else if !c.undecided.is_empty() {
        // The word the run's reports use for the same state.
        "INCONCLUSIVE (no regression shown)"
    } else {
        "OK"
    };
    let _ = writeln!(
        out,
        "{}: {verdict} (tolerance {} %, {} % intervals)",
        c.scenario,
        short(c.tolerance_pct),
        short(c.confidence * 100.0)
    );
    if !c.same_plan {
        let _ = writeln!(
            out,
            "warning: plan hashes differ ({} vs {}): the workloads are not the same",
            c.baseline_plan_hash, c.current_plan_hash
        );
    }
    if !c.infra_differences.is_empty() {
        let _ = writeln!(
            out,
            "warning: the runs differ in their infrastructure ({}): a change may be the \
             infrastructure's",
            crate::escape::terminal(&c.infra_differences.join("; "))
        );
    }
}

/// One stage's table: a row per watched metric.
fn write_stage(out: &mut String, s: &StageComparison) {
    let _ = writeln!(
        out,
        "\nstage {}{}",
        s.name,
        if s.trusted {
            ""
        } else {
            " (untrusted numbers)"
        }
    );
    let rows: Vec<[&str; 5]> = s
        .metrics
        .iter()
        .map(|m| {
            [
                m.metric.as_str(),
                m.baseline_text.as_str(),
                m.current_text.as_str(),
                m.change_text.as_str(),
                m.verdict.word(),
            ]
        })
        .collect();
    let header = ["metric", "baseline", "current", "change", "verdict"];
    write_table(out, header, &rows, true);
}

/// The per-URL rows, a table per stage and URL (descriptive: they never gate).
fn write_urls(out: &mut String, c: &Comparison) {
    for u in &c.urls {
        let _ = writeln!(
            out,
            "\nstage {} at {} (per URL, not gated)",
            u.stage,
            crate::escape::terminal(&u.url)
        );
        let rows: Vec<[&str; 4]> = u
            .figures
            .iter()
            .map(|f| [&*f.metric, &*f.baseline, &*f.current, &*f.change])
            .collect();
        let header = ["metric", "baseline", "current", "change"];
        write_table(out, header, &rows, false);
    }
}

/// A table, its header first, each column as wide as its widest cell: the first column
/// left-aligned, the others right-aligned, except a last column of words (`words_last`),
/// written as it is so that no line ends in spaces.
fn write_table<const N: usize>(
    out: &mut String,
    header: [&str; N],
    rows: &[[&str; N]],
    words_last: bool,
) {
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0)
    };
    let w: [usize; N] = std::array::from_fn(width);
    for r in std::iter::once(&header).chain(rows) {
        out.push_str("  ");
        for (i, cell) in r.iter().enumerate() {
            if i > 0 {
                out.push_str("  ");
            }
            let _ = match i {
                0 => write!(out, "{cell:<w$}", w = w[0]),
                _ if words_last && i == N - 1 => write!(out, "{cell}"),
                _ => write!(out, "{cell:>w$}", w = w[i]),
            };
        }
        out.push('\n');
    }
}

/// The stages only one run has, then what regressed and what is undecided.
fn write_conclusions(out: &mut String, c: &Comparison) {
    for n in &c.only_in_baseline {
        let _ = writeln!(out, "\nstage {n} is only in the baseline");
    }
    for n in &c.only_in_current {
        let _ = writeln!(out, "\nstage {n} is only in the current run");
    }
    if c.regressed() {
        let _ = writeln!(out, "\nworse beyond tolerance:");
        for r in &c.regressions {
            let _ = writeln!(out, "  {r}");
        }
    }
    if !c.undecided.is_empty() {
        let _ = writeln!(
            out,
            "\ninconclusive (the interval straddles the tolerance; more requests or rounds would \
             tell):"
        );
        for r in &c.undecided {
            let _ = writeln!(out, "  {r}");
        }
    }
}

/// The trend table: each watched metric across the runs, oldest first.
fn write_trend(out: &mut String, t: &Trend) {
    let _ = writeln!(out, "\ntrend ({} runs, oldest first):", t.runs.len());
    for r in &t.rows {
        let cells: Vec<String> = r
            .values
            .iter()
            .map(|v| v.map_or("–".to_string(), num))
            .collect();
        let _ = writeln!(
            out,
            "  {:<16} {:<22} {}",
            r.stage,
            r.metric,
            cells.join("  ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::write_table;

    #[test]
    fn a_table_pads_by_characters_and_leaves_a_last_column_of_words_unpadded() {
        let mut out = String::new();
        let rows = [["ttft.p99 (ms)", "–", "worse"], ["e2e", "12.5", "ok"]];
        write_table(&mut out, ["metric", "baseline", "verdict"], &rows, true);
        assert_eq!(
            out,
            "  metric         baseline  verdict\n  ttft.p99 (ms)         –  worse\n  e2e                12.5  ok\n"
        );
        let mut out = String::new();
        let rows = [
            ["ttft.p99 (ms)", "–", "+100.0 %"],
            ["e2e", "12.5", "+0.0 pt"],
        ];
        write_table(&mut out, ["metric", "baseline", "change"], &rows, false);
        assert_eq!(
            out,
            "  metric         baseline    change\n  ttft.p99 (ms)         –  +100.0 %\n  e2e                12.5   +0.0 pt\n"
        );
    }
}
