//! A scenario as far as it goes without the network: [`compile_plan`] (what `infermeter plan`
//! shows, and every distributed run starts from) and [`validate`] (`infermeter validate`: the
//! plan, the report's baseline and template, as `run` reads them).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::needs::Needs;
use super::{ReportInputs, TargetOverride, load_scenario};
use crate::error::Error;
use crate::plan::Plan;

/// How a plan is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanFormat {
    /// A readable summary per stage.
    Text,
    /// The whole plan, every request recipe included (streamed).
    Json,
}

/// Loads the scenario (the file, or `text` read for it), applies the overrides and compiles
/// its plan.
pub fn compile_plan(
    path: &Path,
    text: Option<&str>,
    params: &[(String, String)],
    target: &TargetOverride,
) -> Result<Plan, Error> {
    let scenario = load_scenario(path, text, params, target)?;
    crate::plan::compile(&scenario).map_err(|source| Error::Plan {
        path: path.to_path_buf(),
        source,
    })
}

/// [`compile_plan`], with what each assertion needs to be decided ([`Needs`]), for `plan`.
pub fn compile_plan_with_needs(
    path: &Path,
    text: Option<&str>,
    params: &[(String, String)],
    target: &TargetOverride,
) -> Result<(Plan, Needs), Error> {
    let scenario = load_scenario(path, text, params, target)?;
    let plan = crate::plan::compile(&scenario).map_err(|source| Error::Plan {
        path: path.to_path_buf(),
        source,
    })?;
    let needs = Needs::of(&scenario, &plan);
    Ok((plan, needs))
}

/// Writes `plan` to `out` as `format` shows it (the text with `needs` under it); a reader
/// that went away (`plan … | head`) is not an error.
pub fn write_plan(
    plan: &Plan,
    needs: &Needs,
    format: PlanFormat,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let written = match format {
        PlanFormat::Text => {
            let mut text = crate::plan::render_text(plan);
            if !needs.rows.is_empty() {
                text.push('\n');
                text.push_str(&needs.to_string());
            }
            // Scenario names and values shown as the console shows them: secrets masked,
            // control characters escaped (the output is not written through the console).
            out.write_all(crate::escape::console(&text, false).as_bytes())
        }
        PlanFormat::Json => {
            let mut out = &mut *out;
            crate::plan::write_json(plan, &mut out).and_then(|_| out.write_all(b"\n"))
        }
    };
    match written.and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(source) => Err(Error::Io {
            action: "write the plan to",
            path: "standard output".into(),
            source,
        }),
    }
}

/// A scenario that [`validate`] found valid.
#[derive(Debug, Clone)]
pub struct Validated {
    pub datasets: usize,
    pub stages: usize,
    /// The baseline the scenario names, when it does not exist yet (`run` needs it).
    pub missing_baseline: Option<PathBuf>,
    /// What each assertion needs to be decided, against what its stage sends.
    pub needs: Needs,
    /// The servers the run needs up, outside infermeter (none for the embedded simulator),
    /// with credentials masked: none when the scenario starts its own.
    pub servers: Vec<String>,
    /// The command the scenario's `server` block starts (secrets masked), when it has one.
    pub starts: Option<Vec<String>>,
    /// Whether that command is a `restart` program (the server runs elsewhere).
    pub restarts: bool,
    /// Its configurations (`config` lines), each with the command it starts (secrets masked),
    /// in the order the run starts them.
    pub server_configs: Vec<(String, Vec<String>)>,
    /// The MLPerf preset: what it asserts and needs, and, when its stage is planned shorter
    /// than MLPerf's minimum duration (and is no smoke run), why it cannot qualify.
    pub mlperf: Option<(String, Option<String>)>,
    /// Each sweep's points (shapes × load levels) and about how long they run
    /// (`plan::sweep_lines`).
    pub sweeps: Vec<String>,
}

/// Checks the scenario at `path` as far as it can without the network: parsed, compiled
/// into its plan (data set files read, hooks compiled, params resolved), its report's
/// baseline read (one not made yet is noted) and its template tried.
pub fn validate(path: &Path, params: &[(String, String)]) -> Result<Validated, Error> {
    let scenario = crate::scenario::load(path, params)?;
    let plan = crate::plan::compile(&scenario).map_err(|source| Error::Plan {
        path: path.to_path_buf(),
        source,
    })?;
    let inputs = ReportInputs::read(&scenario, &plan, None, true)?;
    Ok(Validated {
        datasets: scenario.datasets.len(),
        stages: scenario.stages.len(),
        missing_baseline: inputs.missing_baseline,
        needs: Needs::of(&scenario, &plan),
        servers: outside_servers(&scenario),
        starts: scenario
            .server
            .as_ref()
            .map(|s| crate::redact::command_line(&s.command)),
        restarts: scenario.server.as_ref().is_some_and(|s| s.remote),
        server_configs: plan
            .server_configs
            .iter()
            .map(|c| (c.name.clone(), c.command.clone()))
            .collect(),
        mlperf: mlperf_lines(&scenario),
        sweeps: crate::plan::sweep_lines(&plan),
    })
}

/// `validate`'s lines on the MLPerf preset: what it asserts and needs, and a warning when its
/// stage is planned too short to qualify.
fn mlperf_lines(scenario: &crate::scenario::Scenario) -> Option<(String, Option<String>)> {
    use crate::scenario::StageLimit;
    use crate::sla::mlperf::{MIN_DURATION_S, MIN_QUERIES};
    let m = scenario.mlperf.as_ref()?;
    let stage = m.stage.as_ref()?;
    let line = format!(
        "mlperf  {} {} on stage `{}`: ttft.p99 < {}ms, tpot.p99 < {}ms; qualifying needs {} s, \
         {} queries and the early-stopping rule (docs/sla.md)",
        m.benchmark.value,
        m.scenario.as_str(),
        crate::escape::terminal(&stage.value),
        m.ttft_ms,
        m.tpot_ms,
        MIN_DURATION_S,
        MIN_QUERIES
    );
    let spec = scenario
        .stages
        .iter()
        .find(|s| s.name.value == stage.value)?;
    // The longest the stage may run: its `until-decided` maximum, else its own limit.
    let longest = match spec.until_decided.as_ref().map_or(spec.limit, |u| u.value) {
        StageLimit::Duration(d) => d.as_secs_f64(),
        // How long a count of requests takes is known only once it runs.
        StageLimit::Requests(_) => f64::INFINITY,
    };
    let short = (!m.smoke && longest < MIN_DURATION_S).then(|| {
        format!(
            "stage `{}` runs at most {longest} s, so the run cannot qualify as MLPerf {} \
             (600 s needed); make it longer, or say `smoke=#true` if it is not meant to",
            crate::escape::terminal(&stage.value),
            m.benchmark.value
        )
    });
    Some((line, short))
}

/// The base URLs of a target that is not the embedded simulator, masked for printing.
fn outside_servers(scenario: &crate::scenario::Scenario) -> Vec<String> {
    use crate::scenario::Endpoint;
    if scenario.server.is_some() {
        return Vec::new();
    }
    let urls: Vec<&str> = match &scenario.target.endpoint {
        Endpoint::Sim(_) => Vec::new(),
        Endpoint::Url(u) => vec![u.value.as_str()],
        Endpoint::Urls(r) => r.urls.iter().map(|u| u.url.as_str()).collect(),
    };
    urls.into_iter()
        .map(|u| crate::redact::secrets(u).into_owned())
        .collect()
}
