//! The distributed commands on one machine: shards run without a coordinator and merged by
//! `infermeter merge` (exact counts, refusals listing every problem, a partial merge), the
//! refusal of what cannot be sharded, and `infermeter k8s`'s manifests read back through the
//! Kubernetes API types.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};

use std::path::{Path, PathBuf};

use crate::support::{self, SimProcess};

const TOKEN_ENV: &str = "INFERMETER_COORDINATOR_TOKEN";

/// The run's token in these tests (a real run draws one: `coordinate --token-file`, `k8s`).
pub const TOKEN: &str = "test-token-0123456789abcdef";

pub fn scenario(dir: &std::path::Path, url: &str) -> std::path::PathBuf {
    support::scenario(
        dir,
        "shards.kdl",
        &format!(
            r#"
scenario "shards" {{ seed 3; }}
target "{url}" {{ timeout "30s"; }}
dataset "chat" {{ synthetic {{ input-tokens 32 64; output-tokens 4; }} }}
stage "open" {{ dataset "chat"; arrival "constant" rate=40; requests 40; }}
stage "closed" {{ dataset "chat"; arrival "concurrency" clients=3; requests 21; }}
sla {{ assert "ttft.p50 < 5s"; }}
"#
        ),
    )
}

/// Runs `scenario` as two uncoordinated shards into `dir/shard-N`, checking that each ran
/// its own share of the same plan; their directories.
fn run_two_shards(scenario: &Path, dir: &Path) -> Vec<PathBuf> {
    let shard_dirs: Vec<_> = (0..2).map(|i| dir.join(format!("shard-{i}"))).collect();
    for (i, d) in shard_dirs.iter().enumerate() {
        let out = support::run(scenario, d, &["--shard", &format!("{i}/2")]);
        assert!(
            out.status.code().is_some_and(|c| c != 2 && c != 3),
            "{}",
            support::text(&out).1
        );
        let r = support::results(d);
        assert_eq!(r["shards"]["shards"][0]["index"], i);
        assert_eq!(r["shards"]["shards"][0]["coordinated"], false);
    }
    let (a, b) = (
        support::results(&shard_dirs[0]),
        support::results(&shard_dirs[1]),
    );
    assert_eq!(
        a["plan_hash"], b["plan_hash"],
        "every shard runs the same plan"
    );
    for (stage, total, first) in [("open", 40, 20), ("closed", 21, 11)] {
        assert_eq!(
            support::stage(&a, stage)["requests"]["sent"],
            first,
            "{stage}"
        );
        assert_eq!(
            support::stage(&b, stage)["requests"]["sent"],
            total - first,
            "{stage}"
        );
    }
    shard_dirs
}

#[test]
fn shards_merged_by_the_command_add_up_and_bad_sets_are_refused() {
    let sim = SimProcess::start(&["--jitter", "0"]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let s = scenario(dir, &sim.base_url);
    let shard_dirs = run_two_shards(&s, dir);

    let merged = dir.join("merged");
    let files: Vec<String> = shard_dirs
        .iter()
        .map(|d| d.join("results.json").display().to_string())
        .collect();
    let out = support::infermeter(&[
        "merge",
        &files[0],
        &files[1],
        "--out",
        merged.to_str().unwrap(),
        "--no-plots",
    ]);
    let (stdout, stderr) = support::text(&out);
    // Uncoordinated shards are untrusted; they ran with `--untrusted judge` (support::run),
    // the policy the merge judges under, so the gate passes on the numbers.
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("2 stages untrusted"), "{stdout}");
    let m = support::results(&merged);
    assert_eq!(support::stage(&m, "open")["requests"]["sent"], 40);
    assert_eq!(support::stage(&m, "closed")["requests"]["sent"], 21);
    let reasons = support::stage(&m, "open")["validity"]["reasons"].to_string();
    assert!(reasons.contains("without a coordinator"), "{reasons}");
    assert!(merged.join("report.md").is_file() && merged.join("junit.xml").is_file());

    // One shard alone, and a shard twice: refused, every problem listed.
    let out = support::infermeter(&[
        "merge",
        &files[0],
        &files[0],
        "--out",
        merged.to_str().unwrap(),
    ]);
    let (_, err) = support::text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("shard 0 given 2 times"), "{err}");
    assert!(err.contains("missing shard(s) 1 of 2"), "{err}");
    let partial = dir.join("partial");
    let out = support::infermeter(&[
        "merge",
        &files[1],
        "--allow-missing",
        "--out",
        partial.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", support::text(&out).1);
    let p = support::results(&partial);
    assert_eq!(p["shards"]["missing"], serde_json::json!([0]));
    assert_eq!(p["interrupted"], true);
}

#[test]
fn what_cannot_be_sharded_is_refused_with_its_fix() {
    let out = support::infermeter(&[
        "run",
        "scenarios/capacity-search.kdl",
        "--shard",
        "0/2",
        "-q",
    ]);
    let (_, err) = support::text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("embedded simulator would start once per shard"),
        "{err}"
    );
    assert!(err.contains("a search chooses each probe"), "{err}");
    let out = support::infermeter(&["run", "scenarios/quickstart.kdl", "--shard", "2/2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(support::text(&out).1.contains("below the count"));
}

#[test]
fn k8s_writes_manifests_the_api_types_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let out = support::infermeter(&[
        "k8s",
        "scenarios/distributed.kdl",
        "--shards",
        "3",
        "--image",
        "registry.example/infermeter:0.2",
        "-p",
        "url=http://vllm:8000/v1",
        "--out",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", support::text(&out).1);
    let read = |f: &str| std::fs::read_to_string(tmp.path().join(f)).unwrap();
    let job: Job = serde_json::from_str(&read("distributed-job.json")).unwrap();
    let svc: Service = serde_json::from_str(&read("distributed-service.json")).unwrap();
    let cm: ConfigMap = serde_json::from_str(&read("distributed-configmap.json")).unwrap();
    let spec = job.spec.unwrap();
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!(spec.completions, Some(3));
    let args = spec.template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap();
    assert!(
        args.contains(&"--param=url=http://vllm:8000/v1".to_string()),
        "{args:?}"
    );
    assert_eq!(svc.spec.unwrap().cluster_ip.as_deref(), Some("None"));
    let scenario = std::fs::read_to_string("scenarios/distributed.kdl").unwrap();
    assert!(
        cm.data.unwrap().values().any(|v| *v == scenario),
        "the scenario is in the ConfigMap"
    );
    validate_against_kubernetes_schemas(tmp.path());

    // A scenario that cannot be sharded gets no manifests.
    let out = support::infermeter(&[
        "k8s",
        "scenarios/quickstart.kdl",
        "--shards",
        "2",
        "--image",
        "x",
        "--out",
        tmp.path().join("no").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!tmp.path().join("no").exists());
}

/// `k8s` draws a token for each run and hands it to the pods as a Secret read through an
/// environment reference: in no argument, in no manifest but the Secret, in no file anyone
/// but its owner can read, and never the same twice.
#[test]
fn k8s_hands_each_run_a_new_token_as_a_secret_never_an_argument() {
    let tmp = tempfile::tempdir().unwrap();
    let write = |dir: &str| -> std::path::PathBuf {
        let out = tmp.path().join(dir);
        let o = support::infermeter(&[
            "k8s",
            "scenarios/distributed.kdl",
            "--shards",
            "2",
            "--image",
            "registry.example/infermeter:0.2",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", support::describe(&o));
        out
    };
    let token_in = |dir: &std::path::Path| -> String {
        let secret: Secret = serde_json::from_str(
            &std::fs::read_to_string(dir.join("distributed-secret.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(secret.metadata.name.as_deref(), Some("distributed-secrets"));
        let data = secret.data.unwrap();
        let token = String::from_utf8(data[TOKEN_ENV].0.clone()).unwrap();
        assert!(
            token.len() >= 32 && token.chars().all(|c| c.is_ascii_hexdigit()),
            "{token}"
        );
        token
    };
    let first = write("first");
    let token = token_in(&first);
    let job: Job =
        serde_json::from_str(&std::fs::read_to_string(first.join("distributed-job.json")).unwrap())
            .unwrap();
    let container = &job.spec.unwrap().template.spec.unwrap().containers[0];
    let env = container.env.as_ref().unwrap();
    let var = env.iter().find(|e| e.name == TOKEN_ENV).unwrap();
    assert!(var.value.is_none(), "the token is referenced, not inlined");
    let key = var
        .value_from
        .as_ref()
        .unwrap()
        .secret_key_ref
        .as_ref()
        .unwrap();
    assert_eq!(
        (key.name.as_str(), key.key.as_str()),
        ("distributed-secrets", TOKEN_ENV)
    );
    let args = container.args.clone().unwrap_or_default().join(" ");
    assert!(!args.to_lowercase().contains("token"), "{args}");
    for entry in std::fs::read_dir(&first).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let is_secret = path.ends_with("distributed-secret.json");
        if !is_secret {
            assert!(!text.contains(&token), "{} holds the token", path.display());
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", path.display());
        }
    }
    assert_ne!(
        token_in(&write("second")),
        token,
        "each run gets its own token"
    );
}

/// The manifests against the Kubernetes API's own OpenAPI schemas (1.33, the oldest the
/// `k8s-openapi` types support; strict: no unknown field), with `kubernetes-validate` (a PyPI
/// package that bundles the schemas, so it needs no cluster or network). Skipped with a
/// message when it is not on the PATH, unless `INFERMETER_REQUIRE_K8S_SCHEMA=1` (set by
/// `.ci/run`, which installs it).
fn validate_against_kubernetes_schemas(dir: &std::path::Path) {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 4, "{files:?}");
    let out = match std::process::Command::new("kubernetes-validate")
        .args(["--strict", "--kubernetes-version", "1.33.0"])
        .args(&files)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            assert!(
                std::env::var("INFERMETER_REQUIRE_K8S_SCHEMA").as_deref() != Ok("1"),
                "kubernetes-validate is required (INFERMETER_REQUIRE_K8S_SCHEMA=1): {e}"
            );
            eprintln!("skipped the Kubernetes schema check: kubernetes-validate: {e}");
            return;
        }
    };
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "kubernetes-validate: {said}");
    assert_eq!(said.matches("passed for resource").count(), 4, "{said}");
}

/// Shard 0 serves the coordinator itself (as in the Kubernetes Job): both shards start each
/// stage at the agreed instant, and both exit with the merged gate.
#[test]
fn shard_zero_coordinates_and_every_shard_exits_with_the_merged_gate() {
    let sim = SimProcess::start(&["--jitter", "0"]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let s = scenario(dir, &sim.base_url);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let listen = format!("127.0.0.1:{port}");
    let merged = dir.join("merged");
    let shards: Vec<std::process::Child> = (0..2)
        .map(|i| {
            support::command()
                .arg("run")
                .arg(&s)
                .args(["--shard", &format!("{i}/2"), "--coordinator", &url])
                .args(["--coordinator-listen", &listen])
                .arg("--merged-out")
                .arg(&merged)
                .arg("--out")
                .arg(dir.join(format!("shard-{i}")))
                .args(["--quiet", "--no-plots", "--untrusted", "judge"])
                .env("INFERMETER_COORDINATOR_TOKEN", TOKEN)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<Option<i32>> = shards
        .into_iter()
        .map(|c| c.wait_with_output().unwrap().status.code())
        .collect();
    assert_eq!(codes, [Some(0), Some(0)]);
    let m = support::results(&merged);
    assert_eq!(support::stage(&m, "open")["requests"]["sent"], 40);
    assert_eq!(support::stage(&m, "closed")["requests"]["sent"], 21);
    for shard in m["shards"]["shards"].as_array().unwrap() {
        assert_eq!(shard["coordinated"], true);
        let starts: Vec<&str> = shard["starts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["stage"].as_str().unwrap())
            .collect();
        assert_eq!(starts, ["open", "closed"]);
    }
}
