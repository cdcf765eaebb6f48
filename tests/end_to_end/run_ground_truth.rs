//! What the client measures agrees with what the simulator did: TTFT and ITL from the
//! client's `requests.jsonl` against the simulator's own trace, joined on the request id the
//! simulator returns in `x-infermeter-sim-id`.

use std::collections::HashMap;

use crate::support::*;

fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty());
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// The comparison is made on a shared, noisy machine: a scheduling hiccup can push one run's
/// median over the bound. Up to three runs are made; the client must be within the bounds in
/// one of them (an implementation that adds a millisecond fails all three).
#[test]
fn client_ttft_and_itl_match_the_simulator_at_low_load() {
    let mut attempts = Vec::new();
    for _ in 0..3 {
        match measure() {
            Ok(()) => return,
            Err(why) => attempts.push(why),
        }
    }
    panic!("no run within bounds:\n{}", attempts.join("\n"));
}

/// One run against a fresh simulator; `Err` says which bound was missed.
fn measure() -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let sim = SimProcess::start(&[
        "--decode-base",
        "10ms",
        "--decode-per-seq",
        "0ms",
        "--prefill-per-token",
        "50us",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let text = format!(
        r#"
target "{}" {{ model "infermeter-sim"; timeout "10s"; }}
dataset "d" {{ synthetic {{ input-tokens 100; output-tokens 12; }} }}
stage "low" {{
    dataset "d"
    arrival "constant" rate=8
    requests 16
}}
"#,
        sim.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--requests-jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    drop(sim); // flushes and closes the trace

    // The simulator's view, by id: TTFT from arrival, and its token gaps.
    let mut server: HashMap<u64, (f64, Vec<f64>)> = HashMap::new();
    for line in std::fs::read_to_string(&trace).unwrap().lines() {
        let t: serde_json::Value = serde_json::from_str(line).unwrap();
        let arrival = t["arrival_us"].as_f64().unwrap();
        let first = t["first_token_us"].as_f64().unwrap();
        let tokens: Vec<f64> = t["token_us"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let gaps = tokens.windows(2).map(|w| (w[1] - w[0]) / 1e3).collect();
        server.insert(t["id"].as_u64().unwrap(), ((first - arrival) / 1e3, gaps));
    }
    let mut ttft_diff = Vec::new();
    let mut server_gaps = Vec::new();
    for line in std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap()
        .lines()
    {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        if row["stage"] != "low" {
            continue;
        }
        let id = row["sim_id"]
            .as_u64()
            .expect("the simulator's id is recorded");
        let (server_ttft, gaps) = server.get(&id).expect("every request is in the trace");
        ttft_diff.push(row["ttft_ms"].as_f64().unwrap() - server_ttft);
        server_gaps.extend(gaps.iter().copied());
    }
    assert_eq!(ttft_diff.len(), 16);
    let client_added = median(ttft_diff.clone());
    // The client's TTFT includes its send lag and the loopback round trip: positive, small.
    if !(-0.05..1.0).contains(&client_added) {
        return Err(format!(
            "client-added TTFT p50 {client_added:.3} ms (all: {ttft_diff:?})"
        ));
    }
    let r = results(&out);
    let client_itl = stage(&r, "low")["latency"]["itl_ms"]["p50"]
        .as_f64()
        .unwrap();
    let server_itl = median(server_gaps);
    if (client_itl - server_itl).abs() >= 1.0 {
        return Err(format!(
            "ITL p50: client {client_itl:.3} ms, simulator {server_itl:.3} ms"
        ));
    }
    Ok(())
}
