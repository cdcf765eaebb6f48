//! A password in the target URL (or a key in its query) is never written anywhere: not to
//! results.json, report.md, junit.xml or requests.jsonl, not to the summary or the progress on
//! the terminal, not in `infermeter plan`'s output, not in an error message.

use crate::support::*;

const SECRET: &str = "hunter2";

fn with_credentials(base_url: &str, query: &str) -> String {
    base_url.replacen("http://", &format!("http://bench:{SECRET}@"), 1) + query
}

fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(SECRET), "{what} shows the secret:\n{text}");
}

fn scenario_for(url: &str) -> String {
    format!(
        r#"
target "{url}" {{ model "sim-model"; timeout "5s"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 3; }}
"#
    )
}

#[test]
fn credentials_in_the_target_url_reach_no_output() {
    let sim = SimProcess::start(&["--model", "sim-model"]);
    let dir = tempfile::tempdir().unwrap();
    let url = with_credentials(&sim.base_url, "");
    let path = scenario(dir.path(), "s.kdl", &scenario_for(&url));
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--requests-jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (stdout, stderr) = text(&o);
    assert_clean("stdout", &stdout);
    assert_clean("stderr", &stderr);
    for file in ["results.json", "report.md", "junit.xml", "requests.jsonl"] {
        assert_clean(file, &std::fs::read_to_string(out.join(file)).unwrap());
    }
    let r = results(&out);
    assert!(
        r["target"]["endpoint"]
            .as_str()
            .unwrap()
            .contains("***@127.0.0.1"),
        "the endpoint is shown, masked: {}",
        r["target"]
    );
    assert_eq!(
        stage(&r, "s")["requests"]["ok"],
        3,
        "the credentials were still used"
    );
}

#[test]
fn plan_output_and_errors_mask_credentials_and_secret_query_values() {
    let dir = tempfile::tempdir().unwrap();
    let url = with_credentials(&closed_port_url(), &format!("?api_key={SECRET}&mode=x"));
    let path = scenario(dir.path(), "s.kdl", &scenario_for(&url));
    for format in ["text", "json"] {
        let o = infermeter(&["plan", path.to_str().unwrap(), "--format", format]);
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        let (stdout, _) = text(&o);
        assert_clean(&format!("plan --format {format}"), &stdout);
        assert!(stdout.contains("api_key=***"), "{stdout}");
    }
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(3), "unreachable: {}", describe(&o));
    let (stdout, stderr) = text(&o);
    assert_clean("stdout", &stdout);
    assert_clean("the error", &stderr);
    assert!(stderr.contains("cannot reach"), "{stderr}");
    assert_clean(
        "results.json",
        &std::fs::read_to_string(out.join("results.json")).unwrap(),
    );
}

#[test]
fn a_secret_header_is_masked_in_the_plan_and_left_out_of_its_hash() {
    let dir = tempfile::tempdir().unwrap();
    let with = |value: &str| {
        format!(
            r#"
scenario "h"
target "http://127.0.0.1:9/v1" {{ model "m"; header "Authorization" "Bearer {value}"; header "X-Team" "infra"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 3; }}
"#
        )
    };
    let path = scenario(dir.path(), "s.kdl", &with(SECRET));
    let o = infermeter(&["plan", path.to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (stdout, _) = text(&o);
    assert_clean("plan --format json", &stdout);
    let plan: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        plan["plan"]["target"]["headers"],
        serde_json::json!([["Authorization", "***"], ["X-Team", "infra"]])
    );
    // Credentials are not workload: a rotated token keeps the plan (and its baseline).
    let other = scenario(dir.path(), "t.kdl", &with("other"));
    let o2 = infermeter(&["plan", other.to_str().unwrap(), "--format", "json"]);
    let plan2: serde_json::Value = serde_json::from_str(&text(&o2).0).unwrap();
    assert_eq!(plan["plan"]["hash"], plan2["plan"]["hash"]);
    // Another header value is another workload.
    let team = scenario(dir.path(), "u.kdl", &with(SECRET).replace("infra", "web"));
    let o3 = infermeter(&["plan", team.to_str().unwrap(), "--format", "json"]);
    let plan3: serde_json::Value = serde_json::from_str(&text(&o3).0).unwrap();
    assert_ne!(plan["plan"]["hash"], plan3["plan"]["hash"]);
}

/// Every text file a run writes, and what it printed.
fn every_output(out: &std::path::Path, o: &std::process::Output) -> Vec<(String, String)> {
    let (stdout, stderr) = text(o);
    let mut all = vec![
        ("stdout".to_string(), stdout),
        ("stderr".to_string(), stderr),
    ];
    for entry in std::fs::read_dir(out).unwrap() {
        let path = entry.unwrap().path();
        if let Ok(t) = std::fs::read_to_string(&path) {
            all.push((path.display().to_string(), t));
        }
    }
    all
}

fn assert_nowhere(secret: &str, outputs: &[(String, String)]) {
    for (what, t) in outputs {
        assert!(!t.contains(secret), "{what} shows {secret:?}:\n{t}");
    }
}

#[test]
fn a_password_with_url_punctuation_and_secret_params_reach_no_output() {
    let sim = SimProcess::start(&["--model", "sim-model"]);
    let dir = tempfile::tempdir().unwrap();
    // `)`, `'`, `!`, `*` and `;` are legal in a URL's password and used to end the match.
    let password = "pa)ss'w!rd*;x";
    let url = sim
        .base_url
        .replacen("http://", &format!("http://bench:{password}@"), 1);
    let kdl = format!(
        r#"
param "note" "sk-proj-AbCdEf0123456789xyz"
param "deployment" "d3ployment-v4lue" secret=#true
param "hf" "hf_abcdefghijklmnop"
target "{url}" {{ model "sim-model"; timeout "5s"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 3; }}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = command()
        .env("MY_TOKEN_VAR", "env-t0ken-value-42")
        .args([
            "run",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args([
            "--param",
            "hf=hf_zyxwvutsrqponm",
            "--param-env",
            "note=MY_TOKEN_VAR",
        ])
        .arg("--junit")
        .arg(out.join("junit.xml"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let outputs = every_output(&out, &o);
    assert!(
        outputs.len() >= 8,
        "report files: {:?}",
        outputs.iter().map(|o| &o.0).collect::<Vec<_>>()
    );
    for secret in [
        password,
        "pa%29ss",
        "d3ployment-v4lue",
        "hf_zyxwvutsrqponm",
        "env-t0ken-value-42",
        "sk-proj-AbCdEf",
    ] {
        assert_nowhere(secret, &outputs);
    }
    let r = results(&out);
    assert_eq!(
        stage(&r, "s")["requests"]["ok"],
        3,
        "the credentials were used"
    );
    let p = &r["provenance"]["params"];
    assert_eq!(p["deployment"], "***", "{p}");
    assert_eq!(p["note"], "***", "{p}");
    let line = r["provenance"]["command_line"].to_string();
    assert!(
        line.contains("note=MY_TOKEN_VAR"),
        "the variable's name is kept: {line}"
    );
}

#[test]
fn plan_json_masks_secret_params_and_a_secret_flag_marks_a_name() {
    let dir = tempfile::tempdir().unwrap();
    let kdl = r#"
param "api_key" "k3y-in-a-param-1"
param "team_label" "l4bel-marked-secret"
target "http://127.0.0.1:9/v1" { model "m"; header "X-Api-Key" (param)"api_key"; header "X-Team" (param)"team_label"; }
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
stage "s" { dataset "d"; arrival "concurrency" clients=1; requests 3; }
"#;
    let path = scenario(dir.path(), "s.kdl", kdl);
    for format in ["text", "json"] {
        let o = infermeter(&[
            "plan",
            path.to_str().unwrap(),
            "--format",
            format,
            "--secret",
            "team_label",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        let (stdout, stderr) = text(&o);
        for secret in ["k3y-in-a-param-1", "l4bel-marked-secret"] {
            assert!(
                !stdout.contains(secret),
                "plan --format {format}: {secret}\n{stdout}"
            );
            assert!(!stderr.contains(secret), "{stderr}");
        }
    }
}

#[test]
fn import_vllm_writes_a_bearer_key_as_an_env_reference() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gate.kdl");
    let key = "sk-live-0123456789abcdef";
    let o = infermeter(&[
        "import",
        "vllm",
        "-o",
        file.to_str().unwrap(),
        "--",
        "--model",
        "m",
        "--header",
        &format!("Authorization=Bearer {key}"),
        "--header",
        "X-Api-Key=plain4secret9",
        "--header",
        "X-Team=infra",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let written = std::fs::read_to_string(&file).unwrap();
    let (stdout, stderr) = text(&o);
    for (what, t) in [
        ("the file", &written),
        ("stdout", &stdout),
        ("stderr", &stderr),
    ] {
        for secret in [key, "0123456789abcdef", "plain4secret9"] {
            assert!(!t.contains(secret), "{what} shows {secret}:\n{t}");
        }
    }
    assert!(
        written.contains("api-key env=\"OPENAI_API_KEY\""),
        "{written}"
    );
    assert!(written.contains("header \"X-Team\" \"infra\""), "{written}");
    assert!(!written.contains("header \"Authorization\""), "{written}");
    // The file is a valid scenario.
    let v = infermeter(&["validate", file.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", describe(&v));
}

/// `k8s -p api_key=…`: the key travels in the run's Secret and reaches the shards through an
/// environment reference and `--param-env`, never as an argument; no other manifest, and no
/// line printed, holds it.
#[test]
fn k8s_passes_a_secret_param_as_a_secret_never_an_argument() {
    use k8s_openapi::api::batch::v1::Job;
    let dir = tempfile::tempdir().unwrap();
    let kdl = std::fs::read_to_string("scenarios/distributed.kdl").unwrap()
        + "\nparam \"api_key\" \"none\"\n";
    let path = scenario(dir.path(), "d.kdl", &kdl);
    let out = dir.path().join("k8s");
    let key = "k8s-param-k3y-0123";
    let o = infermeter(&[
        "k8s",
        path.to_str().unwrap(),
        "--shards",
        "2",
        "--image",
        "registry.example/infermeter:0.3",
        "-p",
        &format!("api_key={key}"),
        "-p",
        "rate=30",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (stdout, stderr) = text(&o);
    assert!(!stdout.contains(key) && !stderr.contains(key));
    for entry in std::fs::read_dir(&out).unwrap() {
        let p = entry.unwrap().path();
        let t = std::fs::read_to_string(&p).unwrap();
        // The Secret holds it base64-encoded; no manifest holds it as text.
        assert!(!t.contains(key), "{} holds the key", p.display());
    }
    let job: Job =
        serde_json::from_str(&std::fs::read_to_string(out.join("d-job.json")).unwrap()).unwrap();
    let container = &job.spec.unwrap().template.spec.unwrap().containers[0];
    let args = container.args.clone().unwrap().join(" ");
    assert!(args.contains("--param=rate=30"), "{args}");
    assert!(
        args.contains("--param-env=api_key=INFERMETER_PARAM_API_KEY"),
        "{args}"
    );
    let var = container
        .env
        .as_ref()
        .unwrap()
        .iter()
        .find(|e| e.name == "INFERMETER_PARAM_API_KEY")
        .expect("the param's variable");
    assert!(var.value.is_none(), "referenced, not inlined");
    let secret = std::fs::read_to_string(out.join("d-secret.json")).unwrap();
    let secret: serde_json::Value = serde_json::from_str(&secret).unwrap();
    let b64 = secret["data"]["INFERMETER_PARAM_API_KEY"].as_str().unwrap();
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    assert_eq!(decoded, key.as_bytes());
}
