//! Models and traffic classes through the real binary against the embedded simulator: a
//! stage split between a base model and an adapter gets each model's results, reports and
//! verdicts, and a model the server does not serve is refused as vLLM does; a stage split
//! into classes with priorities gets the priority check, which finds the inversion when the
//! simulator ignores priorities (and fails the gate under `priority-inversion "fail"`) and
//! stays quiet when it honours them.

use crate::support::{describe, results, run, scenario, stage};

/// One sequence at a time, so requests queue. Interactive requests take 200 ms more to
/// prefill (4000 prompt tokens at 50 µs) and answer in 16 tokens; batch requests prefill in
/// 2.5 ms and answer in 200 (1 ms a step). Served first come, first served, every request
/// waits behind about three others of ~210 ms whatever its class, so the interactive class's
/// first tokens come ~200 ms later than the batch class's; served by priority, interactive
/// requests jump the queue and come hundreds of ms earlier.
const CLASSES: &str = r#"
target "sim" {
    max-running 1
    prefill-chunk 0
    prefill-per-token "50us"
    decode-base "1ms"
    decode-per-seq "0ms"
    timeout "60s"
    IGNORE
}
dataset "chat" {
    synthetic {
        input-tokens 4000
        output-tokens 16
    }
}
dataset "batch" {
    synthetic {
        input-tokens 50
        output-tokens 200
    }
}
stage "mixed" {
    dataset "batch"
    arrival "concurrency" clients=4
    requests 80
    class "interactive" weight=1 priority=0 {
        dataset "chat"
    }
    class "batch" weight=1 priority=10
    priority-inversion "fail"
}
"#;

fn classes_run(ignore: bool) -> (std::process::Output, serde_json::Value, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap().keep();
    let src = CLASSES.replace("IGNORE", if ignore { "ignore-priority #true" } else { "" });
    let path = scenario(&dir, "s.kdl", &src);
    let out = dir.join("out");
    let o = run(&path, &out, &["--requests-jsonl"]);
    let r = results(&out);
    (o, r, out)
}

#[test]
fn the_priority_check_fires_when_the_server_ignores_priority_and_not_when_it_honours_it() {
    honoured();
    inverted();
}

/// Served by priority: the interactive class is faster, the gate passes.
fn honoured() {
    let (o, r, out) = classes_run(false);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let s = stage(&r, "mixed");
    let check = &s["priority"];
    assert_eq!(check["inverted"], false, "{check}");
    assert_eq!(check["gates"], true, "{check}");
    let p50 = &check["pairs"][0];
    assert_eq!(
        (p50["higher"].as_str(), p50["figure"].as_str()),
        (Some("interactive"), Some("p50"))
    );
    assert_eq!(p50["outcome"], "honoured", "{check}");
    let groups = s["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{s}");
    let sent: u64 = groups
        .iter()
        .map(|g| g["summary"]["requests"]["sent"].as_u64().unwrap())
        .sum();
    assert_eq!(sent, 80, "every request is in one class");
    assert!(
        !r["sla"].as_array().unwrap().iter().any(|v| v["note"]
            .as_str()
            .unwrap_or("")
            .contains("priority inversion")),
        "{}",
        r["sla"]
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("**Priority**: priority honoured (gates the run)"),
        "{md}"
    );
    // Each request's class, by name, in requests.jsonl; the server was told its priority.
    let rows = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    assert!(rows.contains(r#""class":"interactive""#), "{rows}");
}

/// Served first come, first served: the interactive class is slower, the gate fails, and the
/// summary, the reports and the CSV say so.
fn inverted() {
    let (o, r, out) = classes_run(true);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let s = stage(&r, "mixed");
    let check = &s["priority"];
    assert_eq!(check["inverted"], true, "{check}");
    assert_eq!(check["pairs"][0]["outcome"], "inverted", "{check}");
    let failed: Vec<&serde_json::Value> = r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["outcome"] == "fail")
        .collect();
    assert_eq!(failed.len(), 1, "{}", r["sla"]);
    assert!(
        failed[0]["expr"]
            .as_str()
            .unwrap()
            .starts_with("ttft.p50[class=interactive] <= "),
        "{}",
        failed[0]
    );
    assert!(
        failed[0]["note"]
            .as_str()
            .unwrap()
            .contains("priority inversion: class `interactive`"),
        "{}",
        failed[0]
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("priority INVERTED (gates the run)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("class interactive (priority 0): "),
        "{stdout}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for shown in [&md, &html] {
        assert!(
            shown.contains("priority INVERTED (gates the run)"),
            "{shown}"
        );
    }
    let csv = std::fs::read_to_string(out.join("stages.csv")).unwrap();
    assert!(csv.contains("\r\nmixed[class=batch],"), "{csv}");
}

const MODELS: &str = r#"
target "sim" {
    model "base"
    adapters {
        lora-sql 3.0
    }
    timeout "30s"
    decode-base "2ms"
    decode-per-seq "0ms"
}
dataset "d" {
    synthetic {
        input-tokens 64
        output-tokens 8
    }
}
stage "mixed" {
    dataset "d"
    arrival "concurrency" clients=4
    requests 60
    model "base" weight=3
    model "lora-sql" weight=1
    model "missing" weight=1
}
sla {
    assert "error_rate[model=base] < 50%"
    assert "error_rate[model=missing] < 50%"
}
"#;

#[test]
fn each_model_has_its_results_and_verdicts_and_an_unknown_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", MODELS);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--requests-jsonl"]);
    // The missing model's requests are refused, so its assertion fails the run.
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let r = results(&out);
    let s = stage(&r, "mixed");
    let by_name = |name: &str| {
        s["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["by"] == "model" && g["label"] == name)
            .unwrap_or_else(|| panic!("model {name} in {s}"))
    };
    let base = &by_name("base")["summary"];
    let lora = &by_name("lora-sql")["summary"];
    let missing = &by_name("missing")["summary"];
    assert_eq!(base["requests"]["failed"], 0, "{base}");
    assert_eq!(lora["requests"]["failed"], 0, "{lora}");
    let sent = missing["requests"]["sent"].as_u64().unwrap();
    assert!(sent > 0, "{missing}");
    assert_eq!(missing["requests"]["errors"]["http_404"], sent, "{missing}");
    let total: u64 = ["base", "lora-sql", "missing"]
        .iter()
        .map(|m| by_name(m)["summary"]["requests"]["sent"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 60);
    // The verdicts are judged on each model's own requests.
    let verdict = |expr: &str| {
        r["sla"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["expr"] == expr)
            .unwrap_or_else(|| panic!("{expr} in {}", r["sla"]))
            .clone()
    };
    assert_eq!(verdict("error_rate[model=base] < 50%")["outcome"], "pass");
    assert_eq!(
        verdict("error_rate[model=missing] < 50%")["outcome"],
        "fail"
    );
    let rows = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    assert!(rows.contains(r#""model":"lora-sql""#), "{rows}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("`lora-sql`"), "{md}");
}
