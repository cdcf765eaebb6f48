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
