//! Tests that run the real `infermeter` binary against the real simulator (in-process or
//! in its own process) or against misbehaving servers written for the test, over real HTTP.

#[path = "../support/mod.rs"]
mod support;

mod agentic;
mod ci_action;
mod ci_workflow;
mod closed_output;
mod distributed_cli;
mod distributed_hostile;
mod distributed_netns;
mod engine_answers;
mod engine_numbers;
mod engine_truth;
mod gate_outcomes;
mod gate_trust;
mod hooks;
mod hostile_text;
mod hub_fetch;
mod images;
mod input_bounds;
mod labels;
mod library_api;
mod onboarding;
mod otlp;
mod pooling;
mod profile_gate;
mod profile_ramp;
mod profile_run;
mod readme_quickstart;
mod redaction;
mod report_compare;
mod report_formats;
mod report_provenance;
mod responses;
mod responses_whole;
mod results_inputs;
mod routers;
mod run_basic;
mod run_cpus;
mod run_faults;
mod run_ground_truth;
mod run_hangs;
mod run_hostile_http;
mod run_interrupt;
mod run_outputs;
mod run_signals;
mod scenario_cli;
mod sessions;
mod steady_state;
mod telemetry_run;
mod tokenizer_file;
mod tool_calls;
mod until_decided;
mod warmup_run;
mod workloads;
