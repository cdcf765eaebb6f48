//! A run's files, settled before its first request: the output directory (a fresh one per run
//! by default), every output path checked — no two outputs on one file, none on an input, every
//! directory writable — and the directory marked as this run's before anything is measured:
//! a `results.json` with `"complete": false` replaces the previous run's, whose report and JUnit
//! files are removed, so a stale pass can never be read as this run's (see docs/results.md).
//! Which files those are, and what each does when stale, is the report's table of outputs
//! ([`OUTPUTS`]).

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::Error;
use crate::plan::{EndpointPlan, Plan};
use crate::report::{OUTPUTS, Output, Stale, Writer, is_plot_file};
use crate::results::{RESULTS_SCHEMA_VERSION, Results, ResultsError, TargetInfo, write_results};

/// Where this run writes, every path checked.
#[derive(Debug)]
pub(super) struct Outputs {
    pub(super) dir: PathBuf,
    pub(super) requests_jsonl: Option<PathBuf>,
    /// `answers.jsonl`, when a stage's data set checks its answers.
    pub(super) answers_jsonl: Option<PathBuf>,
    /// The outputs written only when asked for that this run writes (`requests.jsonl`, the
    /// llm-d Benchmark Report, `requests.parquet`).
    pub(super) asked: Vec<Output>,
}

/// What a run reads, which no output may overwrite.
pub(super) struct Inputs<'a> {
    pub(super) scenario: &'a Path,
    pub(super) template: Option<&'a Path>,
    pub(super) baseline: Option<&'a Path>,
}

impl Outputs {
    /// Creates the output directory (`dir`, or a fresh `results/<scenario>-<UTC time>[-N]`)
    /// for the outputs every run writes and those of `asked` (Parquet brings `requests.jsonl`,
    /// which it is converted from), and checks every output path: an `Error::Usage` when two
    /// would be one file or one is an input, an `Error::Io` (with the OS cause) when one
    /// cannot be written.
    pub(super) fn prepare(
        dir: Option<&Path>,
        scenario_name: &str,
        asked: &[Output],
        junit: Option<&Path>,
        step_summary: Option<&Path>,
        inputs: &Inputs<'_>,
    ) -> Result<Outputs, Error> {
        let dir = match dir {
            Some(d) => {
                create_dir(d)?;
                d.to_path_buf()
            }
            None => fresh_dir(Path::new("results"), scenario_name)?,
        };
        if let Some(parent) = junit.and_then(Path::parent) {
            create_dir(parent)?;
        }
        let mut asked = asked.to_vec();
        if asked.contains(&Output::Parquet) && !asked.contains(&Output::Requests) {
            asked.push(Output::Requests);
        }
        let outputs = Outputs {
            requests_jsonl: asked
                .contains(&Output::Requests)
                .then(|| dir.join(Output::Requests.name())),
            answers_jsonl: asked
                .contains(&Output::Answers)
                .then(|| dir.join(Output::Answers.name())),
            dir,
            asked,
        };
        outputs.check_collisions(junit, step_summary, inputs)?;
        probe_dir(&outputs.dir)?;
        if let Some(parent) = junit.and_then(Path::parent) {
            probe_dir(parent)?;
        }
        let files = outputs.files();
        for file in files.iter().map(|(_, p)| p.as_path()).chain(junit) {
            if file.is_dir() {
                return Err(Error::Io {
                    action: "write",
                    path: file.to_path_buf(),
                    source: std::io::Error::new(ErrorKind::IsADirectory, "it is a directory"),
                });
            }
        }
        Ok(outputs)
    }

    /// The files the run writes into its directory (plots aside), by name.
    fn files(&self) -> Vec<(&'static str, PathBuf)> {
        OUTPUTS
            .iter()
            .filter(|f| !f.asked || self.asked.contains(&f.output))
            .map(|f| (f.name, self.dir.join(f.name)))
            .collect()
    }

    /// This run's copy of `output`.
    pub(super) fn path(&self, output: Output) -> PathBuf {
        self.dir.join(output.name())
    }

    fn check_collisions(
        &self,
        junit: Option<&Path>,
        step_summary: Option<&Path>,
        inputs: &Inputs<'_>,
    ) -> Result<(), Error> {
        let mut outputs: Vec<(String, PathBuf)> = self
            .files()
            .into_iter()
            .map(|(what, p)| (format!("the run's {what}"), p))
            .collect();
        let mut extra: Vec<(&str, &Path)> = Vec::new();
        extra.extend(junit.map(|p| ("--junit", p)));
        extra.extend(step_summary.map(|p| ("GITHUB_STEP_SUMMARY", p)));
        let dir = identity(&self.dir);
        for (flag, path) in &extra {
            let id = identity(path);
            // The same JUnit document twice is harmless.
            let same_content = *flag == "--junit" && id == identity(&self.path(Output::Junit));
            if let Some((what, _)) = outputs
                .iter()
                .find(|(_, p)| identity(p) == id && !same_content)
            {
                return Err(collision(flag, path, what));
            }
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            if id.parent() == Some(dir.as_path()) && name.is_some_and(|n| is_plot_file(&n)) {
                return Err(collision(flag, path, "a plot of the run"));
            }
            outputs.push((flag.to_string(), path.to_path_buf()));
        }
        let read: Vec<(&str, &Path)> = [
            Some(("the scenario", inputs.scenario)),
            inputs.template.map(|p| ("the report template", p)),
            inputs.baseline.map(|p| ("the baseline", p)),
        ]
        .into_iter()
        .flatten()
        .collect();
        refuse_overwrite(
            &outputs,
            &read,
            "write the run's outputs elsewhere (--out DIR, --junit FILE)",
        )
    }

    /// Marks the directory as this run's before anything is measured: `placeholder` (marked
    /// incomplete) replaces `results.json`, and the previous run's files that a stale run
    /// removes ([`Stale::Removed`]: its reports, JUnit, `requests.jsonl`) are removed, with
    /// the `--junit` file.
    pub(super) fn begin(&self, placeholder: &Results, junit: Option<&Path>) -> Result<(), Error> {
        write_results(placeholder, &self.path(Output::Results)).map_err(results_error)?;
        let stale = removed_when_stale(&self.dir);
        for path in stale.iter().map(PathBuf::as_path).chain(junit) {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(Error::Io {
                        action: "remove the previous run's",
                        path: path.to_path_buf(),
                        source,
                    });
                }
            }
        }
        Ok(())
    }
}

/// Refuses (exit 2) to start over `dir` when it holds an earlier run's results: any
/// `results.json` but the placeholder of a run that measured nothing (one that could not be
/// carried out, or was killed before its first stage), whose directory a rerun takes over as
/// before. Nothing in `dir` is touched. `--force` ([`RunSettings::overwrite`]) skips this; the
/// default directory is new for every run, so never holds one.
///
/// [`RunSettings::overwrite`]: super::RunSettings::overwrite
pub(super) fn refuse_earlier(dir: &Path) -> Result<(), Error> {
    let path = dir.join(Output::Results.name());
    if !path.is_file() {
        return Ok(());
    }
    let held = match crate::results::read_unvalidated(&path) {
        Ok(r) if !r.complete && r.stages.is_empty() && r.warmup.is_none() => return Ok(()),
        Ok(r) => format!(
            "an earlier run's results (scenario `{}`, started {})",
            r.scenario, r.started_at
        ),
        Err(_) => format!("a {} that this run would replace", Output::Results.name()),
    };
    Err(Error::usage(
        format!("--out {} holds {held}", dir.display()),
        "pass --force to replace them (the earlier run's reports and JUnit go too), or give \
         another --out DIR; without --out, every run gets a new directory under results/",
    ))
}

/// A run that stopped before it had a plan (an invalid scenario, a data set that does not
/// load) cannot write its own placeholder, but `dir` may hold an earlier run's verdict: that
/// `results.json` is marked unfinished (`complete: false`, `passed: false`, `error` saying
/// why) and its report and JUnit removed, so a CI step that reads the directory after this
/// failure does not take the earlier pass for this run's. Best effort: the failure that got
/// us here is what the caller reports.
pub(super) fn mark_stale(dir: &Path, why: &Error) {
    let path = dir.join(Output::Results.name());
    let Ok(mut earlier) = crate::results::read_unvalidated(&path) else {
        return;
    };
    earlier.complete = false;
    earlier.passed = false;
    earlier.outcome = crate::sla::SlaOutcome::Fail;
    earlier.error = Some(format!(
        "stale: a later run with this output directory stopped before measuring ({}); these \
         are an earlier run's results",
        crate::redact::secrets(&crate::error::chain(why))
    ));
    if write_results(&earlier, &path).is_ok() {
        for stale in removed_when_stale(dir) {
            let _ = std::fs::remove_file(stale);
        }
    }
}

/// The files of `dir` that a run starting over it removes: an earlier server's log too (a
/// run with a `server` block writes its own).
fn removed_when_stale(dir: &Path) -> Vec<PathBuf> {
    OUTPUTS
        .iter()
        .filter(|f| f.stale == Stale::Removed)
        .map(|f| dir.join(f.name))
        .chain([dir.join(super::server::SERVER_LOG)])
        .collect()
}

/// The plan's routes over several URLs as the result keeps them (masked).
pub(super) fn routes(plan: &Plan) -> Option<crate::protocol::Routes> {
    match &plan.target.endpoint {
        EndpointPlan::Urls(routes) => Some(TargetInfo::masked_routes(routes)),
        _ => None,
    }
}

/// The `results.json` written before the first request: the plan's identity, no stage,
/// `passed` and `complete` false.
pub(super) fn placeholder(plan: &Plan) -> Results {
    let (endpoint, default_model) = match &plan.target.endpoint {
        EndpointPlan::Sim(cfg) => ("sim".to_string(), Some(cfg.model.clone())),
        EndpointPlan::Url(url) => (crate::redact::secrets(url).into_owned(), None),
        EndpointPlan::Urls(routes) => (routes.label(), None),
    };
    Results {
        schema_version: RESULTS_SCHEMA_VERSION,
        scenario: plan.scenario.clone(),
        description: plan.description.clone(),
        plan_hash: plan.hash.clone(),
        seed: plan.seed,
        passed: false,
        // No verdict yet: nothing that reads `outcome` alone may take this run for a pass.
        outcome: crate::sla::SlaOutcome::Fail,
        sla_policy: crate::results::SlaPolicy::default(),
        compare_tolerances: crate::results::CompareTolerances::default(),
        interrupted: false,
        error: Some(
            "the run has not finished: it is still running, was killed, or stopped before \
             measuring"
                .into(),
        ),
        complete: false,
        infermeter_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: crate::units::rfc3339(SystemTime::now()),
        target: TargetInfo {
            endpoint,
            api: plan.target.request.api,
            stream: plan.target.request.stream,
            model: plan
                .target
                .request
                .model
                .clone()
                .or(default_model)
                .unwrap_or_default(),
            tokenizer: tokenizer_name(&plan.tokenizer),
            cache_salt: None,
            routes: routes(plan),
            affinity_header: plan.target.request.affinity_header.clone(),
            priority_header: plan.target.request.priority_header.clone(),
            network: None,
        },
        warmup: None,
        stages: Vec::new(),
        sla: Vec::new(),
        telemetry: None,
        searches: Vec::new(),
        frontiers: Vec::new(),
        provenance: None,
        configs: None,
        mlperf: None,
        shards: None,
    }
}

/// A results write that failed, as the I/O error it is (exit code 3, not 2).
pub(super) fn results_error(e: ResultsError) -> Error {
    match e {
        ResultsError::Write { path, source } => Error::Io {
            action: "write",
            path,
            source,
        },
        other => Error::Input(other),
    }
}

/// What a command writes into `dir` as a result's directory (`merge --out`, a coordinator's
/// merged result): every output of the table that is rendered from results, each named for
/// the messages. Plots are matched by name ([`is_plot_file`]) in [`refuse_overwrite_dir`].
pub(super) fn dir_outputs(dir: &Path) -> Vec<(String, PathBuf)> {
    OUTPUTS
        .iter()
        .filter(|f| !matches!(f.writer, Writer::Runner | Writer::FromRequests(_)))
        .map(|f| (format!("the merged {}", f.name), dir.join(f.name)))
        .collect()
}

/// Refuses (exit 2, with `help`) when one of `outputs` would be written over one of `inputs`:
/// the same file, however the paths spell it (links and `..` followed).
pub(super) fn refuse_overwrite(
    outputs: &[(String, PathBuf)],
    inputs: &[(&str, &Path)],
    help: &str,
) -> Result<(), Error> {
    for (what, input) in inputs {
        let id = identity(input);
        if let Some((output, _)) = outputs.iter().find(|(_, p)| identity(p) == id) {
            return Err(Error::usage(
                format!(
                    "{} is {what}, and {output} would be written over it",
                    input.display()
                ),
                help,
            ));
        }
    }
    Ok(())
}

/// [`refuse_overwrite`] for a result's directory `dir` ([`dir_outputs`]), plots included.
pub(super) fn refuse_overwrite_dir(
    dir: &Path,
    inputs: &[(&str, &Path)],
    help: &str,
) -> Result<(), Error> {
    refuse_overwrite(&dir_outputs(dir), inputs, help)?;
    let dir_id = identity(dir);
    for (what, input) in inputs {
        let id = identity(input);
        let name = id.file_name().map(|n| n.to_string_lossy().into_owned());
        if id.parent() == Some(dir_id.as_path()) && name.is_some_and(|n| is_plot_file(&n)) {
            return Err(Error::usage(
                format!(
                    "{} is {what}, and a plot would be written over it",
                    input.display()
                ),
                help,
            ));
        }
    }
    Ok(())
}

fn tokenizer_name(spec: &crate::dataset::TokenizerSpec) -> String {
    use crate::dataset::TokenizerSpec;
    match spec {
        TokenizerSpec::Cl100kBase => "cl100k_base".into(),
        TokenizerSpec::O200kBase => "o200k_base".into(),
        TokenizerSpec::File(p) => p
            .file_name()
            .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into()),
    }
}

fn collision(flag: &str, path: &Path, what: &str) -> Error {
    Error::usage(
        format!("{flag} {} is also where {what} goes", path.display()),
        format!("give {flag} a file of its own (the output directory gets junit.xml anyway)"),
    )
}

fn create_dir(dir: &Path) -> Result<(), Error> {
    if dir.as_os_str().is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        action: "create the output directory",
        path: dir.to_path_buf(),
        source,
    })
}

/// Proves `dir` takes new files (permissions, a read-only file system) before the run rather
/// than after it.
fn probe_dir(dir: &Path) -> Result<(), Error> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    tempfile::Builder::new()
        .prefix(".infermeter-probe-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|source| Error::Io {
            action: "write into",
            path: dir.to_path_buf(),
            source,
        })
}

/// A path as the file system resolves it (symbolic links and `..` followed), for comparing
/// paths that may not exist yet.
fn identity(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (parent.canonicalize(), path.file_name()) {
        (Ok(p), Some(name)) => p.join(name),
        _ => path.to_path_buf(),
    }
}

/// A new directory `root/<scenario>-<UTC time>`, or `…-2`, `…-3`… when a run started in the
/// same second has it already: created here (not just named), so two runs never share one.
fn fresh_dir(root: &Path, scenario_name: &str) -> Result<PathBuf, Error> {
    create_dir(root)?;
    let stamp = crate::units::rfc3339(SystemTime::now()).replace([':', '-'], "");
    let base = format!("{}-{}", slug(scenario_name), stamp.trim_end_matches('Z'));
    let mut n = 1u32;
    loop {
        let name = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        let dir = root.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == ErrorKind::AlreadyExists && n < 10_000 => n += 1,
            Err(source) => {
                return Err(Error::Io {
                    action: "create the output directory",
                    path: dir,
                    source,
                });
            }
        }
    }
}

/// A scenario name as a directory name: ASCII letters and digits, lower-cased, the rest `-`,
/// at most 64 characters.
fn slug(s: &str) -> String {
    s.chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_in_the_same_second_get_their_own_directories() {
        let root = tempfile::tempdir().unwrap();
        let a = fresh_dir(root.path(), "Pr Gate").unwrap();
        let b = fresh_dir(root.path(), "Pr Gate").unwrap();
        assert_ne!(a, b);
        assert!(a.is_dir() && b.is_dir());
        assert!(
            a.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("pr-gate-")
        );
    }

    #[test]
    fn junit_on_the_results_file_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("out");
        let scenario = root.path().join("s.kdl");
        std::fs::write(&scenario, "").unwrap();
        let inputs = Inputs {
            scenario: &scenario,
            template: None,
            baseline: None,
        };
        let prepare =
            |junit: &Path| Outputs::prepare(Some(&dir), "s", &[], Some(junit), None, &inputs);
        let e = prepare(&dir.join("results.json")).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(prepare(&dir.join("stage-a-timeline.svg")).is_err());
        assert!(prepare(&scenario).is_err());
        // `..` and the directory's own junit.xml are fine.
        prepare(&dir.join("junit.xml")).unwrap();
        prepare(&root.path().join("elsewhere/j.xml")).unwrap();
        let e = prepare(&dir.join("sub/../report.md")).unwrap_err();
        assert!(e.to_string().contains("report.md"), "{e}");
    }
}
