//! The server configuration axis: with `config` lines in the `server` block, every stage runs
//! once on each configuration, configuration by configuration (so the server restarts once
//! per configuration, not per stage). Stage `steady` on configuration `mr1` is `steady@mr1`,
//! with the same seed (the same requests) on every configuration, so that the configurations
//! are compared on one workload; assertions scoped to a stage apply to each of its copies.

use crate::scenario::Scenario;
use crate::sla::ScopedAssertion;

use super::{ServerConfigPlan, StagePlan};

/// The configurations' stages, and the assertions rescoped to them. Unchanged without
/// configurations.
pub(super) fn cross(
    scenario: &Scenario,
    stages: Vec<StagePlan>,
    sla: Vec<ScopedAssertion>,
) -> (Vec<StagePlan>, Vec<ScopedAssertion>, Vec<ServerConfigPlan>) {
    let Some(spec) = scenario.server.as_ref().filter(|s| !s.configs.is_empty()) else {
        return (stages, sla, Vec::new());
    };
    let names: Vec<&str> = spec.configs.iter().map(|c| c.name.as_str()).collect();
    let configs = names
        .iter()
        .map(|&name| ServerConfigPlan {
            name: name.to_string(),
            command: crate::redact::command_line(&spec.configured(Some(name)).command),
        })
        .collect();
    let crossed = names
        .iter()
        .flat_map(|&config| stages.iter().map(move |s| on(s, config)))
        .collect();
    let scoped = sla
        .into_iter()
        .flat_map(|a| match &a.stage {
            Some(stage) if scenario.stages.iter().any(|s| &s.name.value == stage) => names
                .iter()
                .map(|c| ScopedAssertion {
                    stage: Some(format!("{stage}@{c}")),
                    ..a.clone()
                })
                .collect(),
            _ => vec![a],
        })
        .collect();
    (crossed, scoped, configs)
}

/// `stage` on configuration `config`: renamed, and a sweep point's group with it (each
/// configuration's sweep is a curve of its own).
fn on(stage: &StagePlan, config: &str) -> StagePlan {
    let mut s = stage.clone();
    s.name = format!("{}@{config}", stage.name);
    s.server = Some(config.to_string());
    if let Some(p) = &mut s.profile {
        p.group = format!("{}@{config}", p.group);
    }
    s
}
