//! Tests of the library's stages on their own: scenario parsing and diagnostics, SLA grammar
//! and evaluation, reports, telemetry normalisation, the streaming client against captured
//! transcripts.

#[path = "../support/mod.rs"]
mod support;

mod architecture;
mod chunk_props;
mod client_head_corpus;
mod client_hostile;
mod client_transcripts;
mod engine_settings;
mod metrics_vocabulary;
mod otlp_receive;
mod profile_plans;
mod report_html;
mod report_plots;
mod report_render;
mod report_schema;
mod responses_corpus;
mod results_corpus;
mod scenario_corpus;
mod scenario_fuzz;
mod scenario_labels;
mod scenario_network;
mod scenario_parse;
mod scenario_schema;
mod scenario_snapshots;
mod scenario_telemetry;
mod scenario_warmup;
mod session_tool_time;
mod sla_evaluate;
mod sla_parse;
mod sla_prefix;
mod sla_telemetry;
mod sla_trust;
mod telemetry_gpu;
mod telemetry_normalize;
mod telemetry_prometheus;
