//! Tests of the embedded simulator over real HTTP: its wire format, latency model, faults and
//! metrics.

#[path = "../support/mod.rs"]
mod support;

mod sim_connection;
mod sim_draft;
mod sim_endpoints;
mod sim_faults;
mod sim_latency;
mod sim_metrics;
mod sim_preempt_prefix;
mod sim_prefix_cache;
mod sim_priority;
mod sim_response_store;
mod sim_scenario;
mod sim_timings;
mod sim_wire;
