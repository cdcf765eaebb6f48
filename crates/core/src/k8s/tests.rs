//! The manifests against the Kubernetes API: every object survives a round trip through
//! k8s-openapi's deserialisers unchanged (a field the API does not know would be dropped and
//! show), and the structure a distributed run relies on is there.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};

use super::*;

fn opts() -> K8sOptions {
    K8sOptions {
        name: "pr-gate".into(),
        namespace: Some("bench".into()),
        image: "ghcr.io/acme/infermeter:0.2".into(),
        shards: 4,
        cpus: 2,
        memory: "2Gi".into(),
        port: 7777,
        params: vec![("rate".into(), "200".into())],
        results_claim: None,
        spread_required: true,
        run_args: vec![],
    }
}

fn secrets() -> Vec<PodSecret> {
    vec![PodSecret::new(
        "INFERMETER_COORDINATOR_TOKEN",
        "0123456789abcdef0123456789abcdef",
    )]
}

fn sample_bundle() -> Bundle {
    Bundle {
        scenario: "gate.kdl".into(),
        files: BTreeMap::from([
            ("gate.kdl".to_string(), b"scenario \"g\" {}".to_vec()),
            ("data/prompts.jsonl".to_string(), b"{}\n".to_vec()),
            ("tok/tokenizer.bin".to_string(), vec![0xff, 0x00, 0x9f]),
        ]),
    }
}

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(
    v: &T,
) -> serde_json::Value {
    let json = serde_json::to_value(v).unwrap();
    let back: T = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(&back, v);
    assert_eq!(
        serde_json::to_value(&back).unwrap(),
        json,
        "fields lost in a round trip"
    );
    json
}

#[test]
fn objects_round_trip_through_the_api_types() {
    let m = manifests(&opts(), &sample_bundle(), &secrets()).unwrap();
    for (file, text) in m.files("pr-gate") {
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let again = match v["kind"].as_str().unwrap() {
            "ConfigMap" => round_trip(&serde_json::from_value::<ConfigMap>(v.clone()).unwrap()),
            "Service" => round_trip(&serde_json::from_value::<Service>(v.clone()).unwrap()),
            "Job" => round_trip(&serde_json::from_value::<Job>(v.clone()).unwrap()),
            "Secret" => round_trip(&serde_json::from_value::<Secret>(v.clone()).unwrap()),
            other => panic!("{file}: unexpected kind {other}"),
        };
        assert_eq!(again, v, "{file}");
        assert!(v["metadata"]["name"].is_string(), "{file}");
        assert_eq!(v["metadata"]["namespace"], "bench");
    }
    let json = serde_json::to_value(&m.job).unwrap();
    assert_eq!(json["apiVersion"], "batch/v1");
    assert_eq!(
        serde_json::to_value(&m.service).unwrap()["apiVersion"],
        "v1"
    );
}

#[test]
fn an_indexed_job_of_guaranteed_pinned_spread_shards() {
    let m = manifests(&opts(), &sample_bundle(), &secrets()).unwrap();
    let spec = m.job.spec.as_ref().unwrap();
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!((spec.completions, spec.parallelism), (Some(4), Some(4)));
    assert_eq!(spec.backoff_limit, Some(0));
    let pod = spec.template.spec.as_ref().unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    // Pod 0's stable name: <job>-0.<service>, through the headless Service.
    assert_eq!(pod.subdomain.as_deref(), Some("pr-gate"));
    let svc = m.service.spec.as_ref().unwrap();
    assert_eq!(svc.cluster_ip.as_deref(), Some("None"));
    assert_eq!(m.service.metadata.name.as_deref(), Some("pr-gate"));
    let pod_labels = spec
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .as_ref()
        .unwrap();
    for (k, v) in svc.selector.as_ref().unwrap() {
        assert_eq!(pod_labels.get(k), Some(v), "the Service selects the shards");
    }
    let c = &pod.containers[0];
    let r = c.resources.as_ref().unwrap();
    assert_eq!(r.requests, r.limits, "Guaranteed QoS: requests = limits");
    let cpu = &r.limits.as_ref().unwrap()["cpu"].0;
    assert!(cpu.parse::<u32>().is_ok(), "whole cores: {cpu}");
    let args = c.args.as_ref().unwrap().join(" ");
    for want in [
        "--shard=$(JOB_COMPLETION_INDEX)/4",
        "--coordinator=http://pr-gate-0.pr-gate:7777",
        "--coordinator-listen=0.0.0.0:7777",
        "/scenario/gate.kdl",
        "--param=rate=200",
        "--merged-out=/results/merged",
        "--force",
        "--cpus=2",
    ] {
        assert!(args.contains(want), "{want} in {args}");
    }
    let anti = pod
        .affinity
        .as_ref()
        .unwrap()
        .pod_anti_affinity
        .as_ref()
        .unwrap();
    let term = &anti
        .required_during_scheduling_ignored_during_execution
        .as_ref()
        .unwrap()[0];
    assert_eq!(term.topology_key, "kubernetes.io/hostname");
    assert_eq!(
        term.label_selector
            .as_ref()
            .unwrap()
            .match_labels
            .as_ref()
            .unwrap()["infermeter.dev/run"],
        "pr-gate"
    );
}

#[test]
fn every_file_is_mounted_at_its_path() {
    let m = manifests(&opts(), &sample_bundle(), &secrets()).unwrap();
    let cm = &m.config_map;
    let pod = m.job.spec.unwrap().template.spec.unwrap();
    let vol = pod
        .volumes
        .unwrap()
        .into_iter()
        .find(|v| v.name == "scenario")
        .unwrap();
    let items = vol.config_map.unwrap().items.unwrap();
    let paths: Vec<&str> = items.iter().map(|i| i.path.as_str()).collect();
    assert_eq!(
        paths,
        ["data/prompts.jsonl", "gate.kdl", "tok/tokenizer.bin"]
    );
    for i in &items {
        assert!(
            i.key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)),
            "{}",
            i.key
        );
        let text = cm.data.as_ref().is_some_and(|d| d.contains_key(&i.key));
        let binary = cm
            .binary_data
            .as_ref()
            .is_some_and(|d| d.contains_key(&i.key));
        assert!(
            text != binary,
            "{} is in exactly one of data and binaryData",
            i.key
        );
    }
}

#[test]
fn bad_names_are_refused() {
    let mut o = opts();
    o.name = "PR_gate".into();
    assert!(matches!(
        manifests(&o, &sample_bundle(), &secrets()),
        Err(K8sError::BadName { .. })
    ));
}

fn bundled(files: &[(&str, &str)], dataset: &str) -> Result<Bundle, K8sError> {
    let tmp = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let p = tmp.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let kdl = format!(
        "scenario \"b\" {{ seed 1; }}\ntarget \"http://server:8000/v1\"\n{dataset}\n\
         stage \"s\" {{ dataset \"d\"; arrival \"constant\" rate=1; requests 2; }}\n"
    );
    let path = tmp.path().join("b.kdl");
    std::fs::write(&path, &kdl).unwrap();
    let scenario = crate::scenario::load(&path, &[]).unwrap();
    bundle(&path, &scenario)
}

#[test]
fn the_scenario_travels_with_its_files_and_nothing_outside_it() {
    let jsonl = "{\"prompt\": \"hello\", \"max_tokens\": 4}\n";
    let b = bundled(
        &[("data/p.jsonl", jsonl)],
        "dataset \"d\" { jsonl \"data/p.jsonl\"; }",
    )
    .unwrap();
    assert_eq!(b.scenario, "b.kdl");
    assert_eq!(
        b.files.keys().collect::<Vec<_>>(),
        ["b.kdl", "data/p.jsonl"]
    );
    assert_eq!(b.files["data/p.jsonl"], jsonl.as_bytes());
    let outside = bundled(&[], "dataset \"d\" { jsonl \"../p.jsonl\"; }");
    assert!(
        matches!(outside, Err(K8sError::Outside { .. })),
        "{outside:?}"
    );
}

/// The coordinator token reaches every pod through the run's Secret and an environment
/// reference: never in the pod's arguments, never in any manifest but the Secret.
#[test]
fn the_token_travels_as_a_secret_referenced_by_env() {
    let m = manifests(&opts(), &sample_bundle(), &secrets()).unwrap();
    let token = "0123456789abcdef0123456789abcdef";
    let data = m.secret.data.as_ref().unwrap();
    assert_eq!(data["INFERMETER_COORDINATOR_TOKEN"].0, token.as_bytes());
    assert_eq!(m.secret.metadata.name.as_deref(), Some("pr-gate-secrets"));
    let pod = m.job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let c = &pod.containers[0];
    let env = &c.env.as_ref().unwrap()[0];
    assert_eq!(env.name, "INFERMETER_COORDINATOR_TOKEN");
    assert!(env.value.is_none(), "by reference only");
    let r = env
        .value_from
        .as_ref()
        .unwrap()
        .secret_key_ref
        .as_ref()
        .unwrap();
    assert_eq!(
        (r.name.as_str(), r.key.as_str()),
        ("pr-gate-secrets", "INFERMETER_COORDINATOR_TOKEN")
    );
    for (file, text) in m.files("pr-gate") {
        let in_clear = text.contains(token);
        assert!(!in_clear, "{file} holds the token in clear");
    }
    assert!(format!("{:?}", secrets()).contains("***"));
    // And the node it runs on, for results.json's provenance.infra.client_node.
    let node = c.env.as_ref().unwrap().last().unwrap();
    assert_eq!(node.name, crate::results::K8S_NODE_ENV);
    let field = node
        .value_from
        .as_ref()
        .unwrap()
        .field_ref
        .as_ref()
        .unwrap();
    assert_eq!(field.field_path, "spec.nodeName");
}
