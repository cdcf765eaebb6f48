//! What a run reads besides the scenario, read and checked before anything is sent: the
//! `report { baseline … }` file and the report template (`--template`, else the scenario's),
//! which is tried on results shaped like the run's. `infermeter validate` checks the same.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::assemble::assemble;
use super::outputs::placeholder;
use crate::error::Error;
use crate::metrics::StageSummary;
use crate::plan::Plan;
use crate::report::{self, ReportTemplate};
use crate::results::{Results, read_results};
use crate::runner::{RunOutput, Stop};
use crate::scenario::Scenario;

/// A scenario's baseline and report template, each with its path.
pub struct ReportInputs {
    pub baseline: Option<(PathBuf, Results)>,
    pub template: Option<(PathBuf, ReportTemplate)>,
    /// The baseline the scenario names, when it does not exist and that was allowed.
    pub missing_baseline: Option<PathBuf>,
}

impl ReportInputs {
    /// Reads the baseline and the template (`template`, else the scenario's) and tries the
    /// template on results shaped like the run's (every number zero): an unreadable
    /// baseline, an unreadable template or one that cannot render is an error (exit 2) naming
    /// the file. With `allow_missing_baseline`
    /// (`validate`, run before a previous run's results are at hand), a baseline that does
    /// not exist is only noted in `missing_baseline`.
    pub fn read(
        scenario: &Scenario,
        plan: &Plan,
        template: Option<&Path>,
        allow_missing_baseline: bool,
    ) -> Result<ReportInputs, Error> {
        let base_dir = scenario.source.base_dir();
        let mut missing_baseline = None;
        let baseline = match &scenario.report.baseline {
            Some(p) if allow_missing_baseline && !base_dir.join(p).exists() => {
                missing_baseline = Some(base_dir.join(p));
                None
            }
            Some(p) => {
                let path = base_dir.join(p);
                let r = read_results(&path).map_err(Error::Baseline)?;
                Some((path, r))
            }
            None => None,
        };
        let path = template
            .map(Path::to_path_buf)
            .or_else(|| scenario.report.template.as_ref().map(|t| base_dir.join(t)));
        let template = match path {
            Some(path) => {
                // A regular file only: a FIFO here would hold the run before it starts.
                let text = crate::files::read_regular_text(&path, crate::files::MAX_TEXT_FILE)
                    .map_err(|source| Error::Template {
                        path: path.clone(),
                        source,
                    })?;
                let t = ReportTemplate {
                    name: path.display().to_string(),
                    text,
                };
                report::check_template(&t, &sample_results(plan))?;
                Some((path, t))
            }
            None => None,
        };
        Ok(ReportInputs {
            baseline,
            template,
            missing_baseline,
        })
    }
}

/// Results shaped like the run's (its stages, warm-up, verdicts, telemetry), every number
/// zero: what a user template is tried on before the run.
fn sample_results(plan: &Plan) -> Results {
    let summary = |s: &crate::plan::StagePlan| StageSummary {
        name: s.name.clone(),
        profile: s.profile.clone().map(crate::metrics::ProfilePoint::planned),
        ..StageSummary::default()
    };
    let p = placeholder(plan);
    let output = RunOutput {
        endpoint: p.target.endpoint.clone(),
        model: p.target.model.clone(),
        tokenizer: p.target.tokenizer.clone(),
        started_at: SystemTime::now(),
        warmup: plan.warmup.as_ref().map(summary),
        stages: plan
            .stages
            .iter()
            .filter(|s| !matches!(s.load, crate::plan::Load::Search(_)))
            .map(summary)
            .collect(),
        searches: Vec::new(),
        stop: Stop::Completed,
        cache_salt: None,
        network: None,
        problems: Vec::new(),
        server: None,
        starts: Vec::new(),
        telemetry: plan
            .telemetry
            .as_ref()
            .map(|_| crate::telemetry::TelemetryReport::default()),
    };
    assemble(
        plan,
        &output,
        &crate::sla::Context::default(),
        crate::results::SlaPolicy::default(),
    )
}
