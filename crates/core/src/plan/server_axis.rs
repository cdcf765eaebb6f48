//! The server configuration axis: with `config` lines in the `server` block, every stage runs
//! once on each configuration, configuration by configuration (so the server restarts once
//! per configuration, not per stage). Stage `steady` on configuration `mr1` is `steady@mr1`,
//! with the same seed (the same requests) on every configuration, so that the configurations
//! are compared on one workload; assertions scoped to a stage apply to each of its copies. A
//! configuration's `clients=N` links the load to it: its fixed closed loops run N clients.

use crate::scenario::Scenario;
use crate::sla::ScopedAssertion;

use super::{Load, ServerConfigPlan, StagePlan};

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
    let crossed = spec
        .configs
        .iter()
        .flat_map(|c| stages.iter().map(move |s| on(s, &c.name, c.clients)))
        .collect();
    let scoped = sla
        .into_iter()
        .flat_map(|a| match &a.stage {
            // A `best.` assertion's stage names the figure's stage across the
            // configurations: it stays one assertion.
            Some(stage) if !a.assertion.best && names_stage(scenario, stage) => names
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

/// Whether an assertion's scope names a stage of the scenario, or one shape of a shaped
/// sweep (`stage@128/32`, see `profile::rescope_shapes`).
fn names_stage(scenario: &Scenario, scope: &str) -> bool {
    scenario.stages.iter().any(|s| {
        s.name.value == scope
            || s.shapes
                .iter()
                .any(|sh| super::profile::shape_group(&s.name.value, sh.value) == scope)
    })
}

/// `stage` on configuration `config`: renamed, and a sweep point's group with it (each
/// configuration's sweep is a curve of its own); a fixed closed loop runs the configuration's
/// `clients` when it links them.
fn on(stage: &StagePlan, config: &str, clients: Option<u32>) -> StagePlan {
    let mut s = stage.clone();
    if let (
        Some(n),
        Load::Closed {
            clients,
            ramp: None,
        },
        None,
    ) = (clients, &mut s.load, &s.profile)
    {
        *clients = n;
    }
    s.name = format!("{}@{config}", stage.name);
    s.server = Some(config.to_string());
    if let Some(p) = &mut s.profile {
        p.group = format!("{}@{config}", p.group);
    }
    s
}

#[cfg(test)]
mod tests {
    use crate::plan::Load;

    fn plan(server: &str, stages: &str) -> crate::plan::Plan {
        let text = format!(
            "target \"http://127.0.0.1:8000/v1\"\nserver {{\ncommand \"sh\" \"--n\" \"1\"\n{server}\n}}\n\
             dataset \"d\" {{ synthetic {{ input-tokens 8; output-tokens 4; }} }}\n{stages}\n\
             sla {{ assert \"e2e.p50 < 1s\" stage=\"a\"; assert \"ttft.p50 < 1s\"; }}\n"
        );
        let s = crate::scenario::parse_str(std::path::Path::new("s.kdl"), &text, &[]).unwrap();
        crate::plan::compile(&s).unwrap()
    }

    #[test]
    fn server_configs_cross_the_stages_configuration_by_configuration() {
        let p = plan(
            "config \"x\" clients=2 { args \"--n\" \"2\"; }\nconfig \"y\"",
            "stage \"a\" { dataset \"d\"; arrival \"concurrency\" clients=8; requests 4; }\n\
             stage \"b\" { dataset \"d\"; arrival \"poisson\" rate=5; requests 4; }\n\
             stage \"c\" { dataset \"d\"; requests 4; sweep { concurrency 1 3; } }",
        );
        let names: Vec<&str> = p.stages.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "a@x", "b@x", "c@1c@x", "c@3c@x", "a@y", "b@y", "c@1c@y", "c@3c@y"
            ]
        );
        // The same requests on each configuration.
        assert_eq!(p.stages[0].seed, p.stages[4].seed);
        // clients=2 links the fixed closed loop only, not a sweep's points.
        let clients = |i: usize| match p.stages[i].load {
            Load::Closed { clients, .. } => clients,
            _ => 0,
        };
        assert_eq!((clients(0), clients(4)), (2, 8));
        assert_eq!((clients(3), clients(7)), (3, 3));
        assert_eq!(p.stages[2].profile.as_ref().unwrap().group, "c@x");
        let scoped: Vec<Option<&str>> = p.sla.iter().map(|a| a.stage.as_deref()).collect();
        assert_eq!(scoped, [Some("a@x"), Some("a@y"), None]);
        assert_eq!(p.server_configs[0].command, ["sh", "--n", "2"]);
        assert_eq!(p.stages[5].server.as_deref(), Some("y"));
    }

    #[test]
    fn server_without_configs_leaves_the_plan_and_its_hash_alone() {
        let stages =
            "stage \"a\" { dataset \"d\"; arrival \"concurrency\" clients=8; requests 4; }";
        let p = plan("", stages);
        assert_eq!(p.stages.len(), 1);
        assert!(p.stages[0].server.is_none() && p.server_configs.is_empty());
        let json = serde_json::to_string(&p.stages[0]).unwrap();
        assert!(!json.contains("\"server\""), "{json}");
    }
}
