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
