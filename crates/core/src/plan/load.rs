//! File-backed data sets in the plan compiler: loads ShareGPT, JSONL and trace files (and hook
//! scripts) into the plan, computes a trace replay's schedule, and prints them for
//! `infermeter plan`.

use std::fmt::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::dataset::{
    ContextSpec, DatasetSource, History, ItemFormat, LoadReport, MAX_TURNS, Tokenizer,
    TokenizerSpec, TraceFormat, TraceRow, generate_agentic, load_agentic, load_jsonl,
    load_sharegpt, load_trace, validate_length,
};
use crate::scenario::{Dataset, DatasetKind};
use crate::units::Duration;

use super::{DatasetPlan, HookPlan, Load, PlanError, Schedule, StagePlan};

/// Loads the tokenizer only when a data set needs token counts.
pub(super) struct LazyTokenizer<'a> {
    spec: &'a TokenizerSpec,
    base_dir: &'a Path,
    loaded: Option<Tokenizer>,
}

impl<'a> LazyTokenizer<'a> {
    pub(super) fn new(spec: &'a TokenizerSpec, base_dir: &'a Path) -> Self {
        LazyTokenizer {
            spec,
            base_dir,
            loaded: None,
        }
    }

    fn get(&mut self, dataset: &str) -> Result<&Tokenizer, PlanError> {
        if self.loaded.is_none() {
            let t =
                Tokenizer::load(self.spec, self.base_dir).map_err(|source| PlanError::Dataset {
                    dataset: dataset.to_string(),
                    source,
                })?;
            self.loaded = Some(t);
        }
        Ok(self.loaded.as_ref().expect("just loaded"))
    }
}

/// The source of a file-backed data set (synthetic ones are compiled by `compile`); `seed`
/// drives sampling.
pub(super) fn load_dataset(
    d: &Dataset,
    base_dir: &Path,
    tokenizer: &mut LazyTokenizer<'_>,
    seed: u64,
    api: crate::protocol::Api,
) -> Result<DatasetSource, PlanError> {
    let name = d.name.value.as_str();
    let wrap = |source| PlanError::Dataset {
        dataset: name.to_string(),
        source,
    };
    let source = match &d.kind {
        DatasetKind::Synthetic(_) => {
            return Err(PlanError::EmptyDataset {
                dataset: name.to_string(),
                detail: "a synthetic data set has no file".into(),
            });
        }
        DatasetKind::ShareGpt(s) => {
            let tok = tokenizer.get(name)?;
            let shown = s.path.value.display().to_string();
            let loaded = load_sharegpt(
                &super::data_file::resolve(base_dir, &s.path.value, name)?,
                &shown,
                s.count,
                &s.filters,
                s.output_tokens,
                d.session.map(|s| s.turns.unwrap_or(MAX_TURNS)),
                seed,
                tok,
            )
            .map_err(wrap)?;
            if loaded.items.is_empty() {
                return Err(PlanError::EmptyDataset {
                    dataset: name.to_string(),
                    detail: skipped_text(&loaded.report),
                });
            }
            DatasetSource::Items {
                format: ItemFormat::ShareGpt,
                load: loaded.report,
                items: loaded.items,
            }
        }
        DatasetKind::Jsonl(j) => {
            let tok = tokenizer.get(name)?;
            let shown = j.path.value.display().to_string();
            let loaded = load_jsonl(
                &super::data_file::resolve(base_dir, &j.path.value, name)?,
                &shown,
                j.count,
                j.max_tokens,
                seed,
                tok,
                api,
            )
            .map_err(wrap)?;
            DatasetSource::Items {
                format: ItemFormat::Jsonl,
                load: loaded.report,
                items: loaded.items,
            }
        }
        DatasetKind::Agentic(a) => {
            let tok = tokenizer.get(name)?;
            agentic_file(a, base_dir, name, seed, tok)?.map_err(wrap)?
        }
        DatasetKind::AgenticSynthetic(shape) => agentic_generated(shape, name, seed)?,
        DatasetKind::Trace(t) => {
            let shown = t.path.value.display().to_string();
            let (rows, load) = load_trace(
                &super::data_file::resolve(base_dir, &t.path.value, name)?,
                &shown,
                t.format,
            )
            .map_err(wrap)?;
            DatasetSource::Trace {
                format: t.format,
                block_tokens: t.block_tokens,
                load,
                rows,
            }
        }
    };
    Ok(source)
}

/// The dataset's hook script, read into the plan.
pub(super) fn load_hooks(d: &Dataset, base_dir: &Path) -> Result<Option<HookPlan>, PlanError> {
    let Some(path) = &d.hooks else {
        return Ok(None);
    };
    let full = base_dir.join(&path.value);
    let source =
        crate::files::read_regular_text(&full, crate::files::MAX_TEXT_FILE).map_err(|source| {
            PlanError::HooksFile {
                dataset: d.name.value.clone(),
                path: full.clone(),
                source,
            }
        })?;
    // Compile errors are reported now, with file, line and column, before any request.
    let shown = path.value.display().to_string();
    crate::hooks::Hooks::compile(&source, &shown).map_err(|source| PlanError::Hooks {
        dataset: d.name.value.clone(),
        source,
    })?;
    let sha256 = Sha256::digest(source.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(Some(HookPlan {
        path: path.value.display().to_string(),
        sha256,
        source,
    }))
}

/// The offsets of a trace replay and the first row it uses. `limit` caps the request count.
pub(super) fn trace_schedule(
    rows: &[TraceRow],
    speedup: f64,
    start: Duration,
    window: Option<Duration>,
    max_requests: Option<u64>,
    duration: Option<Duration>,
) -> (Vec<u64>, u64) {
    let start_ns = start.as_nanos();
    let first = rows.partition_point(|r| r.at_ns < start_ns);
    let end_ns = window.map_or(u64::MAX, |w| start_ns.saturating_add(w.as_nanos()));
    let mut offsets = Vec::new();
    let base = rows.get(first).map_or(start_ns, |r| r.at_ns);
    for r in &rows[first..] {
        if r.at_ns >= end_ns || max_requests.is_some_and(|m| offsets.len() as u64 >= m) {
            break;
        }
        let at = ((r.at_ns - base) as f64 / speedup).round() as u64;
        if duration.is_some_and(|d| at >= d.as_nanos()) {
            break;
        }
        offsets.push(at);
    }
    (offsets, first as u64)
}

fn skipped_text(r: &LoadReport) -> String {
    let mut parts: Vec<String> = r.skipped.iter().map(|(k, v)| format!("{k} {v}")).collect();
    if parts.is_empty() {
        parts.push("none".into());
    }
    format!(
        "{} records in `{}`, skipped: {}",
        r.records,
        r.path,
        parts.join(", ")
    )
}

/// The `dataset` line of a file-backed source.
pub(super) fn render_source(
    name: &str,
    source: &DatasetSource,
    out: &mut String,
) -> std::fmt::Result {
    match source {
        DatasetSource::Synthetic { .. } => Ok(()),
        DatasetSource::Items {
            format,
            load,
            items,
        } => {
            let (inp, outp) = items.iter().fold((0u64, 0u64), |(a, b), i| {
                (
                    a + u64::from(i.input_tokens),
                    b + u64::from(i.output_tokens),
                )
            });
            let n = items.len().max(1) as u64;
            if load.sha256.is_empty() {
                // Generated (`agentic tasks=N { … }`): no file to name.
                return writeln!(
                    out,
                    "dataset    {name}: {format} generated, {} tasks, mean first-turn input {} / \
                     output {} tokens",
                    items.len(),
                    inp / n,
                    outp / n
                );
            }
            writeln!(
                out,
                "dataset    {name}: {format} `{}` (sha256 {}…), {} of {} records, mean input {} / output {} tokens",
                load.path,
                &load.sha256[..load.sha256.len().min(12)],
                items.len(),
                load.records,
                inp / n,
                outp / n
            )?;
            if !load.skipped.is_empty() {
                let parts: Vec<String> = load
                    .skipped
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect();
                writeln!(out, "           skipped: {}", parts.join(", "))?;
            }
            Ok(())
        }
        DatasetSource::Trace {
            format,
            block_tokens,
            load,
            rows,
        } => {
            let span = rows.last().map_or(0, |r| r.at_ns);
            writeln!(
                out,
                "dataset    {name}: {} trace `{}` (sha256 {}…), {} rows over {:.3}s, {block_tokens}-token prefix blocks",
                match format {
                    TraceFormat::Mooncake => "mooncake",
                    TraceFormat::Azure => "azure",
                },
                load.path,
                &load.sha256[..load.sha256.len().min(12)],
                rows.len(),
                span as f64 / 1e9
            )
        }
    }
}

/// An `agentic "file"` data set's tasks, loaded.
fn agentic_file(
    a: &crate::scenario::AgenticSpec,
    base_dir: &Path,
    name: &str,
    seed: u64,
    tok: &Tokenizer,
) -> Result<Result<DatasetSource, crate::dataset::DatasetError>, PlanError> {
    let path = super::data_file::resolve(base_dir, &a.path.value, name)?;
    let shown = a.path.value.display().to_string();
    Ok(
        load_agentic(&path, &shown, a.count, a.max_tokens, seed, tok).map(|loaded| {
            DatasetSource::Items {
                format: ItemFormat::Agentic,
                load: loaded.report,
                items: loaded.items,
            }
        }),
    )
}

/// `agentic tasks=N { … }`: the shape's lengths checked, its tasks drawn from `seed`.
fn agentic_generated(
    shape: &crate::dataset::AgenticShape,
    name: &str,
    seed: u64,
) -> Result<DatasetSource, PlanError> {
    for (which, dist) in shape.lengths() {
        validate_length(dist).map_err(|reason| PlanError::BadLength {
            dataset: name.to_string(),
            which,
            reason,
        })?;
    }
    // The scenario refuses a wider shape on its line; a shape built in code is held here.
    let most = shape.max_turns();
    if most > crate::dataset::MAX_GENERATED_TURNS {
        return Err(PlanError::AgenticTooLarge {
            dataset: name.to_string(),
            turns: most,
        });
    }
    let items = generate_agentic(shape, seed);
    Ok(DatasetSource::Items {
        format: ItemFormat::Agentic,
        load: LoadReport {
            path: String::new(),
            sha256: String::new(),
            records: items.len() as u64,
            skipped: Default::default(),
        },
        items,
    })
}

/// Context and hooks lines of any dataset.
pub(super) fn render_extras(d: &DatasetPlan, out: &mut String) -> std::fmt::Result {
    let ContextSpec {
        shared_prefix,
        retrieved,
    } = d.context;
    if let Some(p) = shared_prefix {
        writeln!(
            out,
            "           shared prefix: {} groups × {} tokens",
            p.groups, p.tokens
        )?;
    }
    if let Some(r) = retrieved {
        writeln!(
            out,
            "           retrieved: {} chunks × {} tokens from a corpus of {}",
            r.chunks, r.tokens, r.corpus
        )?;
    }
    let items = match &d.source {
        DatasetSource::Items { items, .. } => items.as_slice(),
        _ => &[],
    };
    let tasks = items.iter().filter_map(|i| i.agent.as_deref());
    let (count, sessions, turns) = tasks.fold((0u64, 0u64, 0u64), |(c, s, t), task| {
        (c + 1, s + task.sessions.len() as u64, t + task.turn_count())
    });
    if count > 0 {
        writeln!(
            out,
            "           agentic: {count} tasks, {sessions} sessions (subagents included), {turns} \
             turns; forks, joins and tool waits from the data set"
        )?;
    } else if let Some(s) = &d.session {
        writeln!(
            out,
            "           sessions: up to {} turns, think time {}, history from the {}",
            s.turns,
            s.think_time,
            match s.history {
                History::Dataset => "data set",
                History::Server => "server",
            }
        )?;
        if let Some(lo) = s.tool_time {
            match s.tool_time_max.filter(|hi| *hi > lo) {
                Some(hi) => writeln!(out, "           tool time {lo} to {hi} (uniform)")?,
                None => writeln!(out, "           tool time {lo}")?,
            }
        }
        if s.state == crate::dataset::SessionState::PreviousResponseId {
            writeln!(
                out,
                "           the server keeps the conversation: later turns send only their new \
                 message and the previous response's id"
            )?;
        }
    }
    if let Some(h) = &d.hooks {
        writeln!(
            out,
            "           hooks `{}` (sha256 {}…)",
            h.path,
            &h.sha256[..12]
        )?;
    }
    Ok(())
}

/// A stage replaying its trace data set's timestamps.
pub(super) fn trace_stage(
    spec: &crate::scenario::StageSpec,
    dataset: usize,
    source: &DatasetSource,
    seed: u64,
    drain: Duration,
) -> Result<StagePlan, PlanError> {
    let name = spec.name.value.clone();
    let arrival = &spec.arrival.value;
    let crate::arrival::ArrivalSpec::Trace {
        speedup,
        start,
        window,
    } = arrival
    else {
        return Err(bad(&name, "not a trace arrival"));
    };
    let DatasetSource::Trace { rows, .. } = source else {
        return Err(bad(
            &name,
            "arrival \"trace\" needs a `trace` data set (its timestamps are replayed)",
        ));
    };
    if !speedup.is_finite() || *speedup <= 0.0 {
        return Err(bad(&name, "speedup must be > 0"));
    }
    let (max, dur) = match spec.limit {
        crate::scenario::StageLimit::Requests(n) => (Some(n), None),
        crate::scenario::StageLimit::Duration(d) => (None, Some(d)),
    };
    let (offsets, first_item) = trace_schedule(rows, *speedup, *start, *window, max, dur);
    if offsets.is_empty() {
        return Err(PlanError::NoArrivals {
            stage: name,
            detail: format!("the trace from {start}"),
        });
    }
    Ok(StagePlan {
        name,
        dataset,
        seed,
        max_requests: Some(offsets.len() as u64),
        duration: dur,
        drain_timeout: spec.drain_timeout.unwrap_or(drain),
        load: Load::Open {
            arrival: arrival.clone(),
            schedule: Schedule::Listed {
                offsets_ns: offsets,
            },
        },
        first_item,
        profile: None,
        rounds: 1,
        slice: Default::default(),
        until_decided: None,
        groups: Vec::new(),
        priority_gate: false,
        server: None,
    })
}

fn bad(stage: &str, reason: &str) -> PlanError {
    PlanError::BadStage {
        stage: format!("stage `{stage}`"),
        reason: reason.to_string(),
    }
}
