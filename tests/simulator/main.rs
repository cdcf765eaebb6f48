//! Tests of the embedded simulator over real HTTP: its wire format, latency model, faults and
//! metrics.

#[path = "../support/mod.rs"]
mod support;

mod sim_faults;
mod sim_latency;
mod sim_metrics;
mod sim_wire;
