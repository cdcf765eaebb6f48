//! The metric vocabulary against everything else that spells a metric: the SLA grammar parses
//! every name, `results.json` keeps every latency metric under the vocabulary's key (and
//! nothing else), and the table in docs/metrics.md is the code's.

use std::path::Path;

use infermeter_core::metrics::{
    ApiScope, GoodputSlo, LateClient, LatencyMetric, Metric, MetricSet, PerTurn, PerTurnRecorded,
    PlannedLoad, Recorded, RequestRecord, Shape, StageAggregator, StageClock, Summarised,
    ValidityRules, Worse,
};
use infermeter_core::results::read_results;
use infermeter_core::sla::parse;

#[test]
fn every_metric_name_round_trips_through_the_sla_grammar() {
    for m in Metric::all() {
        let d = m.def();
        let aggs = m.supported_aggregations();
        let refs: Vec<String> = if aggs.is_empty() {
            vec![d.name.to_string()]
        } else {
            aggs.iter().map(|a| format!("{}.{a}", d.name)).collect()
        };
        for r in refs {
            let text = format!("{r} < {}", d.example);
            let a = parse(&text).unwrap_or_else(|e| panic!("{text}: {e} ({})", e.hint));
            assert_eq!(a.metric, m, "{text}");
            assert_eq!(a.metric_ref(), r);
            assert_eq!(a.unit(), d.kind.unit(), "{text}");
        }
    }
}

fn keys(v: &serde_json::Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
    k.sort();
    k
}

fn vocabulary_keys<S: MetricSet>() -> Vec<String> {
    let mut k: Vec<String> = S::metrics().map(|m| m.key().to_string()).collect();
    k.sort();
    k
}

/// The keys every result of the current format has (metrics added later are absent from
/// results written before them).
fn required_keys<S: MetricSet>() -> Vec<String> {
    let mut k: Vec<String> = S::metrics()
        .filter(|m| !m.spec().optional)
        .map(|m| m.key().to_string())
        .collect();
    k.sort();
    k
}

/// A stage of two-turn sessions, every latency metric measured.
fn sessions_stage() -> serde_json::Value {
    let mut agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
    for i in 0..40u64 {
        let t0 = i * 10_000_000;
        agg.record(&RequestRecord {
            index: i / 2,
            turn: (i % 2) as u32,
            scheduled_ns: t0,
            sent_ns: t0 + 50_000,
            first_token_ns: Some(t0 + 20_000_000),
            first_answer_ns: Some(t0 + 25_000_000),
            done_ns: t0 + 60_000_000,
            itl_us: vec![5_000; 8],
            chunks: 9,
            output_tokens: 9,
            input_tokens: 100,
            // Each two-turn session is a task that its second turn completes.
            task_ns: (i % 2 == 1).then_some(70_000_000),
            ..RequestRecord::default()
        });
    }
    let s = agg.finish(StageClock::default(), &ValidityRules::default());
    serde_json::to_value(&s).unwrap()
}

#[test]
fn results_json_keeps_every_latency_metric_under_its_key() {
    let s = sessions_stage();
    assert_eq!(keys(&s["latency"]), vocabulary_keys::<Summarised>());
    assert_eq!(keys(&s["histograms"]), vocabulary_keys::<Recorded>());
    assert_eq!(
        keys(&s["per_turn"][0]["histograms"]),
        vocabulary_keys::<PerTurnRecorded>()
    );
    for k in vocabulary_keys::<PerTurn>() {
        assert!(s["per_turn"][1][&k]["count"].as_u64() == Some(20), "{k}");
    }
    assert!(s["client"][LatencyMetric::SendLag.key()]["p99"].is_number());
    // And what results have been writing all along: a saved run of the current format.
    let saved = read_results(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/results/sim-quickstart.json"),
    )
    .unwrap();
    let stage = serde_json::to_value(&saved.stages[0]).unwrap();
    assert_eq!(keys(&stage["latency"]), required_keys::<Summarised>());
    assert_eq!(keys(&stage["histograms"]), required_keys::<Recorded>());
}

fn shape(s: Shape) -> &'static str {
    match s {
        Shape::Distribution => "distribution",
        Shape::Proportion => "proportion",
        Shape::Rate => "rate",
        Shape::Reading => "reading",
    }
}

fn late_client(l: LateClient) -> &'static str {
    match l {
        LateClient::Raises => "only raises it",
        LateClient::Either => "moves it either way",
        LateClient::Lowers => "only lowers it",
        LateClient::ClientSideErrors => "raises it through `timeout` and `cancelled` only",
        LateClient::LoadOnly => "changes it only through the load",
        LateClient::Answers => "nothing: it judges the answers' text",
        LateClient::BeforeLoad => "nothing: measured before the first request",
    }
}

/// Where `results.json` keeps the metric, as the table says it.
fn stored(m: Metric) -> String {
    let key = m.def().key;
    let Some(l) = m.latency() else {
        return key
            .split(" / ")
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(" / ");
    };
    let mut at = vec![if l.spec().summary {
        format!("`latency.{key}`")
    } else {
        format!("`client.{key}`")
    }];
    at.push(format!("`histograms.{key}`"));
    if l.spec().per_turn {
        at.push(format!("`per_turn[].{key}`"));
    }
    at.join(", ")
}

/// The vocabulary as docs/metrics.md shows it.
fn table() -> String {
    let mut out = String::from(
        "| metric | label | kind | unit | worse when | a late client | APIs | in `results.json` |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for m in Metric::all() {
        let d = m.def();
        let unit = match d.kind.unit() {
            "" => "–",
            u => u,
        };
        let worse = match d.worse {
            Worse::Higher => "higher",
            Worse::Lower => "lower",
        };
        let apis = match d.scope {
            ApiScope::All => "all",
            ApiScope::Streamed => "streamed",
            ApiScope::Generated => "generation",
            ApiScope::Pooled => "pooling",
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {unit} | {worse} | {} | {apis} | {} |\n",
            d.name,
            d.label,
            shape(d.kind.shape()),
            late_client(d.late_client),
            stored(m)
        ));
    }
    out
}

#[test]
fn the_documented_table_is_the_code() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/metrics.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (start, end) = ("<!-- vocabulary -->\n", "<!-- end vocabulary -->");
    let from = doc.find(start).expect("docs/metrics.md marks the table") + start.len();
    let to = doc[from..].find(end).expect("the table's end is marked") + from;
    let want = table();
    assert!(
        doc[from..to] == want,
        "docs/metrics.md's vocabulary table differs from the code; it should read:\n{want}"
    );
}
