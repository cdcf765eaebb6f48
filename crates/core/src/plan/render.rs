//! The human-readable plan printed by `infermeter plan`: what will be sent, how fast, how long,
//! and how big. Never prints a secret (the plan holds only the API key's variable name).

use std::fmt::Write;

use crate::arrival::ArrivalSpec;
use crate::dataset::{DatasetSource, LengthDist, TokenizerSpec};
use crate::units::trim_float;

use super::{EndpointPlan, Load, Plan, StagePlan, TargetPlan};

/// Stages longer than this are summarised from their first recipes only.
const SAMPLE_RECIPES: u64 = 10_000;
/// How many scheduled offsets to show per open-loop stage.
const SHOWN_OFFSETS: usize = 5;

/// A readable, multi-line summary of the plan.
pub fn render_text(plan: &Plan) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = render_into(plan, &mut out);
    out
}

fn render_into(plan: &Plan, out: &mut String) -> std::fmt::Result {
    writeln!(out, "scenario   {}", plan.scenario)?;
    if let Some(d) = &plan.description {
        writeln!(out, "           {d}")?;
    }
    writeln!(out, "seed       {}", plan.seed)?;
    writeln!(out, "plan hash  {} (format {})", plan.hash, plan.format)?;
    render_target(&plan.target, out)?;
    let tokenizer = match &plan.tokenizer {
        TokenizerSpec::Cl100kBase => "cl100k_base".to_string(),
        TokenizerSpec::O200kBase => "o200k_base".to_string(),
        TokenizerSpec::File(p) => p.display().to_string(),
    };
    writeln!(out, "tokenizer  {tokenizer}")?;
    if !plan.params.is_empty() {
        let params: Vec<String> = plan
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        writeln!(out, "params     {}", params.join(", "))?;
    }
    for d in &plan.datasets {
        match &d.source {
            DatasetSource::Synthetic {
                input_tokens,
                output_tokens,
            } => writeln!(
                out,
                "dataset    {}: synthetic, input {}, output {}",
                d.name,
                describe_length(input_tokens),
                describe_length(output_tokens)
            )?,
            other => super::load::render_source(&d.name, other, out)?,
        }
        super::load::render_extras(d, out)?;
    }
    let g = &plan.goodput;
    let slos: Vec<String> = [
        ("ttft", g.ttft),
        ("tpot", g.tpot),
        ("itl", g.itl),
        ("e2e", g.e2e),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| format!("{k} ≤ {v}")))
    .collect();
    if !slos.is_empty() {
        writeln!(out, "goodput    {}", slos.join(", "))?;
    }
    for c in &plan.server_configs {
        writeln!(out, "server     config {}: {}", c.name, c.command.join(" "))?;
    }
    for line in super::sweep_lines(plan) {
        writeln!(out, "sweep      {line}")?;
    }
    let mut running: Option<&str> = None;
    for stage in plan.stages_in_order() {
        writeln!(out)?;
        render_stage(plan, stage, out)?;
        if let Some(config) = stage.server.as_deref() {
            render_server(config, &mut running, out)?;
        }
        render_groups(plan, stage, out)?;
    }
    if !plan.sla.is_empty() {
        writeln!(out)?;
        writeln!(out, "sla")?;
        for a in &plan.sla {
            write!(out, "  assert \"{}\"", a.assertion)?;
            if let Some(s) = &a.stage {
                write!(out, " (stage {s})")?;
            }
            if a.abort_on_fail {
                write!(out, " [abort on fail]")?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

/// The target: where, which API, and what every request carries.
fn render_target(t: &TargetPlan, out: &mut String) -> std::fmt::Result {
    let endpoint = match &t.endpoint {
        EndpointPlan::Sim(cfg) => format!("embedded simulator (model {})", cfg.model),
        EndpointPlan::Url(url) => crate::redact::secrets(url).into_owned(),
        EndpointPlan::Urls(routes) => routes.label(),
    };
    let api = t.request.api.path().trim_start_matches('/');
    writeln!(out, "target     {endpoint}")?;
    write!(out, "           api {api}, timeout {}", t.request.timeout)?;
    if let Some(m) = &t.request.model {
        write!(out, ", model {m}")?;
    }
    if let Some(env) = &t.request.api_key_env {
        write!(out, ", api key from ${env}")?;
    }
    if t.request.ignore_eos {
        write!(out, ", ignore_eos")?;
    }
    if let Some(e) = t.request.reasoning_effort {
        write!(out, ", reasoning effort {}", e.as_str())?;
    }
    if let Some(h) = &t.request.affinity_header {
        write!(out, ", session affinity in {h}")?;
    }
    if let Some(h) = &t.request.priority_header {
        let body = if t.request.priority_body {
            " and the body"
        } else {
            ""
        };
        write!(out, ", class priority in {h}{body}")?;
    }
    if !t.request.stream {
        write!(out, ", whole answers (not streamed)")?;
    }
    writeln!(out)?;
    Ok(())
}

/// `models    base ×3, lora-sql ×1` and `classes   interactive ×1 (priority 0, dataset chat)`.
fn render_groups(plan: &Plan, stage: &StagePlan, out: &mut String) -> std::fmt::Result {
    for g in &stage.groups {
        let labels: Vec<String> = g
            .labels
            .iter()
            .map(|l| {
                let mut more = Vec::new();
                if let Some(p) = l.priority {
                    more.push(format!("priority {p}"));
                }
                if let Some(d) = l.dataset.and_then(|i| plan.datasets.get(i)) {
                    more.push(format!("dataset {}", d.name));
                }
                let more = if more.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", more.join(", "))
                };
                format!("{} ×{}{more}", l.name, l.weight)
            })
            .collect();
        writeln!(out, "  {:<9} {}", format!("{}s", g.by), labels.join(", "))?;
    }
    if stage.priority_gate {
        writeln!(out, "  priority  an inversion fails the gate")?;
    }
    Ok(())
}

/// A stage's server configuration and its cache hygiene: a fresh start where the
/// configuration changes (the server restarted: cold caches), warm where it carries on.
fn render_server<'p>(
    config: &'p str,
    running: &mut Option<&'p str>,
    out: &mut String,
) -> std::fmt::Result {
    let hygiene = match *running {
        None => "fresh start (the run's first server)",
        Some(r) if r == config => "warm (the same server as the stage before: caches kept)",
        Some(_) => "fresh start (the server restarts before this stage: caches cold)",
    };
    *running = Some(config);
    writeln!(out, "  server    config {config}: {hygiene}")
}

fn render_stage(plan: &Plan, stage: &StagePlan, out: &mut String) -> std::fmt::Result {
    let dataset = plan
        .datasets
        .get(stage.dataset)
        .map_or("?", |d| d.name.as_str());
    writeln!(out, "stage `{}` (dataset {dataset})", stage.name)?;
    let load = match &stage.load {
        Load::Open { arrival, .. } => describe_arrival(arrival),
        Load::Closed {
            clients,
            ramp: None,
        } => format!("closed loop, {clients} clients"),
        Load::Closed { ramp: Some(r), .. } => describe_client_ramp(r),
        Load::Search(s) => super::profile::describe_search(s),
    };
    // A multi-turn stage's arrivals and count are sessions, each of several requests.
    let sessions = plan.session_plan(stage).is_some();
    let (load, unit) = if sessions {
        (format!("{load} (sessions)"), "sessions")
    } else {
        (load, "requests")
    };
    writeln!(out, "  load      {load}")?;
    let count = stage.request_count();
    if let Some(rule) = stage.until_decided {
        let least = match (rule.min_requests, rule.min_duration) {
            (_, Some(d)) => format!("for {d}"),
            (Some(n), None) => n.to_string(),
            (None, None) => "its minimum".to_string(),
        };
        let most = match (count, stage.duration) {
            (Some(n), _) => format!("{n}"),
            (None, Some(d)) => format!("for {d}"),
            (None, None) => "unbounded".to_string(),
        };
        writeln!(
            out,
            "  requests  {least}, then until every assertion is decided, at most {most} \
             (until-decided)"
        )?;
    }
    match (count, stage.duration) {
        (Some(n), Some(d)) => writeln!(out, "  {unit:<9} {n} (within {d})")?,
        (Some(n), None) => writeln!(out, "  {unit:<9} {n}")?,
        (None, Some(d)) => writeln!(out, "  {unit:<9} until {d}")?,
        (None, None) => writeln!(out, "  {unit:<9} unbounded")?,
    }
    if let (Load::Open { arrival, schedule }, Some(offsets)) = (&stage.load, stage.offsets()) {
        let last = schedule.last_ns();
        write!(out, "  span      last send at {}", secs(last))?;
        if let Some(rate) = arrival_rate(arrival) {
            let expected = schedule.count() as f64 / rate;
            write!(out, " (expected ≈ {expected:.1}s at the mean rate)")?;
        }
        writeln!(out)?;
        let shown: Vec<String> = offsets.take(SHOWN_OFFSETS).map(secs).collect();
        let more = if schedule.count() > SHOWN_OFFSETS as u64 {
            ", …"
        } else {
            ""
        };
        writeln!(out, "  offsets   {}{more}", shown.join(", "))?;
    }
    let n = count.unwrap_or(SAMPLE_RECIPES).min(SAMPLE_RECIPES);
    let (mut input, mut output): (Vec<u32>, Vec<u32>) = (0..n)
        .map(|i| {
            let r = plan.request(stage, i);
            (r.input_tokens, r.output_tokens)
        })
        .unzip();
    let over = if count == Some(n) {
        format!("over all {n} requests")
    } else {
        format!("over the first {n} requests")
    };
    writeln!(
        out,
        "  input     {} tokens ({over})",
        min_p50_max(&mut input)
    )?;
    writeln!(out, "  output    {} tokens", min_p50_max(&mut output))?;
    writeln!(out, "  drain     {}", stage.drain_timeout)
}

fn min_p50_max(v: &mut [u32]) -> String {
    v.sort_unstable();
    match v {
        [] => "none".into(),
        _ => format!(
            "min {} / p50 {} / max {}",
            v[0],
            v[(v.len() - 1) / 2],
            v[v.len() - 1]
        ),
    }
}

fn secs(ns: u64) -> String {
    format!("{:.3}s", ns as f64 / 1e9)
}

fn arrival_rate(a: &ArrivalSpec) -> Option<f64> {
    match a {
        ArrivalSpec::Constant { rate }
        | ArrivalSpec::Poisson { rate }
        | ArrivalSpec::Gamma { rate, .. } => Some(rate.per_sec()),
        ArrivalSpec::Concurrency { .. }
        | ArrivalSpec::Ramp { .. }
        | ArrivalSpec::RampConcurrency { .. }
        | ArrivalSpec::Trace { .. } => None,
    }
}

fn describe_arrival(a: &ArrivalSpec) -> String {
    match a {
        ArrivalSpec::Constant { rate } => format!("constant {rate}"),
        ArrivalSpec::Poisson { rate } => format!("poisson {rate}"),
        ArrivalSpec::Gamma { rate, burstiness } => {
            format!("gamma {rate}, burstiness {}", trim_float(burstiness.get()))
        }
        ArrivalSpec::Concurrency { clients } => format!("closed loop, {clients} clients"),
        ArrivalSpec::Ramp {
            from,
            to,
            over,
            steps,
        } => match steps {
            None => format!("poisson ramp {from} → {to} over {over}, linear"),
            Some(k) => format!("poisson ramp {from} → {to} over {over}, {k} steps"),
        },
        ArrivalSpec::RampConcurrency {
            from,
            to,
            over,
            steps,
        } => describe_client_ramp(&crate::arrival::ClientRamp {
            from: *from,
            to: *to,
            over: *over,
            steps: *steps,
        }),
        ArrivalSpec::Trace {
            speedup,
            start,
            window,
        } => {
            let mut s = format!("trace replay, speedup {}", trim_float(*speedup));
            if *start != crate::units::Duration::ZERO {
                s.push_str(&format!(", from {start}"));
            }
            if let Some(w) = window {
                s.push_str(&format!(", window {w}"));
            }
            s
        }
    }
}

fn describe_length(d: &LengthDist) -> String {
    match d {
        LengthDist::Fixed { value } => format!("{value}"),
        LengthDist::Choice { values } => {
            let v: Vec<String> = values.iter().map(u32::to_string).collect();
            format!("one of {}", v.join("/"))
        }
        LengthDist::Uniform { min, max } => format!("uniform {min}..={max}"),
        LengthDist::Normal {
            mean,
            stddev,
            min,
            max,
        } => format!(
            "normal(mean {}, sd {}) in {min}..={max}",
            trim_float(*mean),
            trim_float(*stddev)
        ),
        LengthDist::LogNormal {
            median,
            sigma,
            min,
            max,
        } => format!(
            "lognormal(median {}, sigma {}) in {min}..={max}",
            trim_float(*median),
            trim_float(*sigma)
        ),
    }
}

/// `closed-loop ramp 1 → 64 clients over 60s, linear (one more every 952.381ms)`.
fn describe_client_ramp(r: &crate::arrival::ClientRamp) -> String {
    let head = format!(
        "closed-loop ramp {} → {} clients over {}",
        r.from, r.to, r.over
    );
    match r.steps {
        Some(k) => format!("{head}, {k} steps"),
        None => {
            let every = r.start_offset_ns(r.from) as f64 / 1e6;
            format!("{head}, linear (one more every {}ms)", trim_float(every))
        }
    }
}
