//! JUnit XML: one test case per SLA verdict (named by its assertion and stage), so CI systems
//! that read JUnit show which SLA failed, with observed vs threshold in the failure message.

use std::fmt::Write;
use std::path::Path;

use super::ReportError;
use super::numbers::short;
use crate::results::Results;
use crate::sla::{SlaOutcome, SlaVerdict};

/// Names, reasons and messages come from the scenario and the server: escaped for XML 1.0,
/// the characters it forbids included (see [`crate::escape::xml`]).
fn esc(s: &str) -> String {
    crate::escape::xml(s)
}

/// The JUnit document as a string.
pub fn junit_xml(results: &Results) -> String {
    let failures = results
        .sla
        .iter()
        .filter(|v| v.outcome == SlaOutcome::Fail)
        .count();
    let skipped = results
        .sla
        .iter()
        .filter(|v| v.outcome == SlaOutcome::Inconclusive)
        .count();
    let errors = usize::from(results.error.is_some());
    let tests = results.sla.len() + errors;
    let suite = esc(&results.scenario);
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"infermeter\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">"
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"{suite}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" timestamp=\"{}\">",
        esc(&results.started_at)
    );
    if let Some(p) = &results.provenance {
        // Where the run came from, as the suite's properties (CI systems show them).
        let host = &p.host;
        let props = [
            ("infermeter.version", p.build.version.clone()),
            ("infermeter.commit", p.build.commit.clone()),
            ("scenario.file", p.scenario_file.clone()),
            ("scenario.sha256", p.scenario_sha256.clone()),
            ("plan.hash", results.plan_hash.clone()),
            ("host.cpu", format!("{} × {}", host.cpus, host.cpu_model)),
            ("host.kernel", host.kernel.clone()),
            ("host.os", host.os.clone()),
            ("ended_at", p.ended_at.clone()),
        ];
        let _ = writeln!(x, "    <properties>");
        for (name, value) in props {
            let _ = writeln!(
                x,
                "      <property name=\"{name}\" value=\"{}\"/>",
                esc(&value)
            );
        }
        let _ = writeln!(x, "    </properties>");
    }
    for v in &results.sla {
        testcase(&mut x, results, v);
    }
    if let Some(err) = &results.error {
        let _ = writeln!(
            x,
            "    <testcase classname=\"{suite}\" name=\"run completed\">"
        );
        let _ = writeln!(x, "      <error message=\"{}\" type=\"run\"/>", esc(err));
        let _ = writeln!(x, "    </testcase>");
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// One verdict as a test case: passed, skipped (undecided) or failed, with its numbers.
fn testcase(x: &mut String, results: &Results, v: &SlaVerdict) {
    let scenario = &results.scenario;
    let stage = v.stage.as_deref().unwrap_or("all stages");
    let name = esc(&format!("{} [{stage}]", v.assertion));
    let class = esc(&format!("{scenario}.{stage}"));
    // A verdict that observed nothing says so, never "observed 0 ms".
    let observed = super::absence(results, v).map_or_else(
        || format!("observed {} {}", short(v.observed), v.unit()),
        str::to_string,
    );
    let mut message = format!(
        "{observed}{}, threshold {} {unit}",
        v.interval.map_or_else(String::new, |i| format!(
            " [{}, {}] at {:.0} %",
            short(i.low),
            short(i.high),
            i.confidence * 100.0
        )),
        short(v.threshold),
        unit = v.unit()
    );
    if let Some(note) = &v.note {
        let _ = write!(message, " ({note})");
    }
    if let Some(m) = v.more {
        let _ = write!(message, "; {m}");
    }
    if v.outcome == SlaOutcome::Pass {
        let _ = writeln!(x, "    <testcase classname=\"{class}\" name=\"{name}\">");
        let _ = writeln!(x, "      <system-out>{}</system-out>", esc(&message));
        let _ = writeln!(x, "    </testcase>");
        return;
    }
    let _ = writeln!(x, "    <testcase classname=\"{class}\" name=\"{name}\">");
    if v.outcome == SlaOutcome::Inconclusive {
        // JUnit has no "undecided": a skipped case with the reason is how CI shows one.
        let _ = writeln!(
            x,
            "      <skipped message=\"inconclusive: {}\"/>",
            esc(&message)
        );
    } else {
        let _ = writeln!(
            x,
            "      <failure message=\"{}\" type=\"sla\">{}: {}</failure>",
            esc(&message),
            esc(&v.assertion.to_string()),
            esc(&message)
        );
    }
    let _ = writeln!(x, "    </testcase>");
}

/// Writes [`junit_xml`] to `path`, atomically.
pub fn write_junit(results: &Results, path: &Path) -> Result<(), ReportError> {
    crate::results::write_atomic(path, junit_xml(results).as_bytes())
        .map_err(|e| ReportError::io(path, e))
}
