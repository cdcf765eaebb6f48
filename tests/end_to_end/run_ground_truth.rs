//! What the client measures agrees with what the simulator did: TTFT and ITL from the
//! client's `requests.jsonl` against the simulator's own trace, joined on the request id the
//! simulator returns in `x-infermeter-sim-id`. Only what cannot depend on the machine's load is
//! asserted (every request joins, the client never sees a token before the server sent it,
//! every gap is counted); how many milliseconds the client adds is a measurement, made by
//! `cargo bench --bench client` and quoted in docs/performance.md.

use std::collections::HashMap;

use crate::support::*;

fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty());
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[test]
fn client_ttft_and_itl_match_the_simulator_at_low_load() {
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
    let mut client_gaps = 0;
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
        // A request of n content chunks has n − 1 gaps.
        client_gaps += row["chunks"].as_u64().unwrap().saturating_sub(1) as usize;
    }
    assert_eq!(ttft_diff.len(), 16, "every request is joined to the trace");
    // Latency counts from the scheduled instant, before the server received the request, and
    // ends after the server sent the token: never less than the server's own TTFT (a few µs of
    // slack for the two processes' clock reads).
    for d in &ttft_diff {
        assert!(
            *d > -0.05,
            "client TTFT below the server's by {d} ms: {ttft_diff:?}"
        );
    }
    assert_eq!(client_gaps, server_gaps.len(), "every token gap is counted");
    let r = results(&out);
    let client_itl = stage(&r, "low")["latency"]["itl_ms"]["p50"]
        .as_f64()
        .unwrap();
    // Printed for a human reading the log; bounded in `cargo bench --bench client`.
    eprintln!(
        "client-added TTFT p50 {:.3} ms; ITL p50 client {client_itl:.3} ms, simulator {:.3} ms",
        median(ttft_diff),
        median(server_gaps)
    );
}
