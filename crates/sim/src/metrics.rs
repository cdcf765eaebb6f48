//! The simulator's `GET /metrics`: scheduler state and token counters in vLLM's Prometheus
//! text format, so the telemetry module's Prometheus path can be tested end to end without a
//! GPU. The scheduler stores plain atomics once per step; rendering reads them, no lock.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use super::config::SimConfig;
use super::draft::DraftCounters;
use super::histogram::LatencyHistograms;

/// Written by the scheduler task, read by the `/metrics` handler.
#[derive(Debug, Default)]
pub(crate) struct SimMetrics {
    /// `Some` with `metrics-histograms`.
    pub(crate) histograms: Option<LatencyHistograms>,
    /// `Some` with `draft-tokens`: the speculative-decoding counters.
    pub(crate) drafts: Option<DraftCounters>,
    running: AtomicU64,
    waiting: AtomicU64,
    kv_used: AtomicU64,
    prefix_queries: AtomicU64,
    prefix_hits: AtomicU64,
    prompt_tokens: AtomicU64,
    generation_tokens: AtomicU64,
    success: AtomicU64,
    tool_results: AtomicU64,
    tool_results_sim_ids: AtomicU64,
    preemptions: AtomicU64,
}

impl SimMetrics {
    pub(crate) fn new(config: &SimConfig) -> Self {
        let k = config.draft_tokens.min(crate::config::MAX_DRAFT_TOKENS) as usize;
        SimMetrics {
            histograms: config.metrics_histograms.then(LatencyHistograms::default),
            drafts: (k > 0).then(|| DraftCounters::new(k)),
            ..SimMetrics::default()
        }
    }

    /// Gauges, after each step (and when admitting).
    pub(crate) fn set_state(&self, running: usize, waiting: usize, kv_used: u64) {
        self.running.store(running as u64, Ordering::Relaxed);
        self.waiting.store(waiting as u64, Ordering::Relaxed);
        self.kv_used.store(kv_used, Ordering::Relaxed);
    }

    /// Requests running or waiting, as of the last step.
    pub(crate) fn busy(&self) -> bool {
        self.running.load(Ordering::Relaxed) + self.waiting.load(Ordering::Relaxed) > 0
    }

    /// A request admitted: its prompt is queried against the prefix cache (`cached` of its
    /// tokens hit) and prefilled.
    pub(crate) fn admitted(&self, prompt_tokens: u64, cached: u64) {
        self.prefix_queries
            .fetch_add(prompt_tokens, Ordering::Relaxed);
        self.prefix_hits.fetch_add(cached, Ordering::Relaxed);
        self.prompt_tokens
            .fetch_add(prompt_tokens, Ordering::Relaxed);
    }

    /// A preempted request admitted again: its prompt queried against the prefix cache once
    /// more (`cached` of its tokens hit); its prompt tokens were counted at its first
    /// admission.
    pub(crate) fn requeried(&self, prompt_tokens: u64, cached: u64) {
        self.prefix_queries
            .fetch_add(prompt_tokens, Ordering::Relaxed);
        self.prefix_hits.fetch_add(cached, Ordering::Relaxed);
    }

    pub(crate) fn generated(&self, tokens: u64) {
        self.generation_tokens.fetch_add(tokens, Ordering::Relaxed);
    }

    /// A request's tool results, counted once the request is read and its results accepted.
    pub(crate) fn tool_results(&self, r: super::wire::ToolResults) {
        if r.count > 0 {
            self.tool_results
                .fetch_add(u64::from(r.count), Ordering::Relaxed);
            self.tool_results_sim_ids
                .fetch_add(u64::from(r.sim_ids), Ordering::Relaxed);
        }
    }

    /// A running sequence preempted for a more urgent one.
    pub(crate) fn preempted(&self) {
        self.preemptions.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn succeeded(&self) {
        self.success.fetch_add(1, Ordering::Relaxed);
    }

    /// The exposition text; `model` labels every series as vLLM does (`model_name`).
    pub(crate) fn render(&self, model: &str, kv_capacity: u64) -> String {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let usage = if kv_capacity == 0 {
            0.0
        } else {
            (get(&self.kv_used) as f64 / kv_capacity as f64).min(1.0)
        };
        let label = format!("{{model_name=\"{}\"}}", escape(model));
        let mut out = String::with_capacity(2048);
        let mut metric = |name: &str, kind: &str, help: &str, value: String| {
            let _ = writeln!(out, "# HELP vllm:{name} {help}");
            let _ = writeln!(out, "# TYPE vllm:{name} {kind}");
            let _ = writeln!(out, "vllm:{name}{label} {value}");
        };
        metric(
            "num_requests_running",
            "gauge",
            "Number of requests in model execution batches.",
            get(&self.running).to_string(),
        );
        metric(
            "num_requests_waiting",
            "gauge",
            "Number of requests waiting to be processed.",
            get(&self.waiting).to_string(),
        );
        metric(
            "kv_cache_usage_perc",
            "gauge",
            "KV-cache usage. 1 means 100 percent usage.",
            format!("{usage}"),
        );
        // The name before vLLM 0.10; kept so older normalisers find it too.
        metric(
            "gpu_cache_usage_perc",
            "gauge",
            "GPU KV-cache usage. 1 means 100 percent usage.",
            format!("{usage}"),
        );
        metric(
            "prefix_cache_queries_total",
            "counter",
            "Prefix cache queries, in terms of number of queried tokens.",
            get(&self.prefix_queries).to_string(),
        );
        metric(
            "prefix_cache_hits_total",
            "counter",
            "Prefix cache hits, in terms of number of cached tokens.",
            get(&self.prefix_hits).to_string(),
        );
        metric(
            "prompt_tokens_total",
            "counter",
            "Number of prefill tokens processed.",
            get(&self.prompt_tokens).to_string(),
        );
        metric(
            "generation_tokens_total",
            "counter",
            "Number of generation tokens processed.",
            get(&self.generation_tokens).to_string(),
        );
        metric(
            "num_preemptions_total",
            "counter",
            "Cumulative number of preemption from the engine.",
            get(&self.preemptions).to_string(),
        );
        self.render_tools(&mut out);
        success_total(&mut out, model, get(&self.success));
        if let Some(h) = &self.histograms {
            h.render(&mut out, &escape(model));
        }
        if let Some(d) = &self.drafts {
            d.render(&mut out, &format!("model_name=\"{}\"", escape(model)));
        }
        out
    }

    /// The simulator's own series (no vLLM counterpart): tool results read, and those that
    /// named a call id the simulator gave, so a test sees the ids came back.
    fn render_tools(&self, out: &mut String) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP infermeter_sim_tool_results_total Tool results received (chat tool \
             messages, Responses function_call_output items).\n\
             # TYPE infermeter_sim_tool_results_total counter\n\
             infermeter_sim_tool_results_total {}\n\
             # HELP infermeter_sim_tool_results_sim_ids_total Tool results naming a call id of \
             the simulator's form (call-sim-N).\n\
             # TYPE infermeter_sim_tool_results_sim_ids_total counter\n\
             infermeter_sim_tool_results_sim_ids_total {}",
            get(&self.tool_results),
            get(&self.tool_results_sim_ids)
        );
    }
}

/// `vllm:request_success_total`, labelled by finish reason as vLLM labels it.
fn success_total(out: &mut String, model: &str, n: u64) {
    let _ = writeln!(
        out,
        "# HELP vllm:request_success_total Count of successfully processed requests."
    );
    let _ = writeln!(out, "# TYPE vllm:request_success_total counter");
    let _ = writeln!(
        out,
        "vllm:request_success_total{{finished_reason=\"length\",model_name=\"{}\"}} {n}",
        escape(model),
    );
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The series vLLM's normaliser reads, as vLLM writes them. That the library's
    /// normaliser reads them back is tested over HTTP (tests/simulator/sim_metrics.rs); this
    /// checks the values and the escaping of a hostile model name.
    #[test]
    fn renders_what_the_vllm_normaliser_reads() {
        let m = SimMetrics::default();
        m.set_state(3, 5, 250);
        m.admitted(100, 0);
        m.admitted(20, 16);
        m.generated(7);
        m.succeeded();
        let text = m.render("sim\"model", 1000);
        let label = "{model_name=\"sim\\\"model\"}";
        for (name, value) in [
            ("num_requests_running", "3"),
            ("num_requests_waiting", "5"),
            ("kv_cache_usage_perc", "0.25"),
            ("prefix_cache_queries_total", "120"),
            ("prefix_cache_hits_total", "16"),
            ("prompt_tokens_total", "120"),
            ("generation_tokens_total", "7"),
        ] {
            let line = format!("\nvllm:{name}{label} {value}\n");
            assert!(text.contains(&line), "{line:?} not in {text}");
        }
        assert!(text.contains("vllm:request_success_total{finished_reason=\"length\""));
        assert!(!text.contains("histogram"), "histograms are off by default");
        let config = SimConfig {
            metrics_histograms: true,
            ..SimConfig::default()
        };
        let with = SimMetrics::new(&config).render("m", 1000);
        assert!(with.contains("# TYPE vllm:time_to_first_token_seconds histogram"));
    }

    #[test]
    fn zero_capacity_does_not_divide_by_zero() {
        let m = SimMetrics::default();
        m.set_state(0, 0, 10);
        assert!(
            m.render("m", 0)
                .contains("vllm:kv_cache_usage_perc{model_name=\"m\"} 0\n")
        );
    }
}
