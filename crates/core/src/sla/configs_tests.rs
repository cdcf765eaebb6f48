//! The configurations' ranking: the winner among decided ones, separation, Pareto, `best.`.
use super::*;
use SlaOutcome::{Fail, Inconclusive, Pass};

fn row(config: &str, figure: f64, spread: f64, verdict: SlaOutcome) -> ConfigRow {
    ConfigRow {
        config: config.into(),
        figure: Some(figure),
        interval: (spread > 0.0).then_some(FigureInterval {
            low: figure - spread,
            high: figure + spread,
            confidence: Some(0.95),
            across: Some(Across::Requests),
        }),
        verdict,
        decided: verdict == Pass,
        startup_ms: None,
        throughput: Some(figure),
        e2e_p50_ms: None,
        e2e_p95_ms: Some(1000.0 / figure),
        pareto: false,
        note: None,
    }
}

#[test]
fn only_a_decided_configuration_wins_and_overlap_is_not_separation() {
    // The undecided one has the highest figure: it may yet fail, so it never wins.
    let rows = [
        row("a", 10.0, 1.0, Pass),
        row("b", 50.0, 1.0, Inconclusive),
        row("c", 12.0, 1.5, Pass),
        row("d", 90.0, 1.0, Fail),
    ];
    let (best, separated) = winner(&rows);
    assert_eq!(best.as_deref(), Some("c"));
    // c [10.5, 13.5] overlaps a [9, 11].
    assert_eq!(separated, Some(false));
    let why = why(
        Metric::from_name("goodput_rate").unwrap(),
        best.as_deref(),
        separated,
        &rows,
    );
    assert!(why.contains("not separated"), "{why}");
    let apart = [row("a", 10.0, 1.0, Pass), row("c", 20.0, 1.0, Pass)];
    assert_eq!(winner(&apart), (Some("c".into()), Some(true)));
    assert_eq!(
        winner(&[row("a", 10.0, 0.0, Pass)]),
        (Some("a".into()), None)
    );
    let none = [row("b", 50.0, 1.0, Inconclusive), row("d", 9.0, 0.0, Fail)];
    assert_eq!(winner(&none), (None, None));
    assert!(why_none(&none).contains("never called best"));
}

fn why_none(rows: &[ConfigRow]) -> String {
    why(Metric::from_name("goodput_rate").unwrap(), None, None, rows)
}

#[test]
fn the_pareto_front_keeps_what_nothing_beats_on_both() {
    let mut rows = [
        row("fast", 10.0, 0.0, Pass),
        row("big", 40.0, 0.0, Pass),
        row("worse", 5.0, 0.0, Pass),
    ];
    // fast: 10 req/s at 100 ms; big: 40 req/s at 25 ms; worse: 5 req/s at 10 ms.
    rows[2].e2e_p95_ms = Some(10.0);
    mark_pareto(&mut rows);
    let front: Vec<bool> = rows.iter().map(|r| r.pareto).collect();
    assert_eq!(front, [false, true, true]);
}

fn ranking(rows: Vec<ConfigRow>) -> ConfigRanking {
    let (best, separated) = winner(&rows);
    ConfigRanking {
        by: "goodput_rate".into(),
        stage: "chat".into(),
        why: String::new(),
        best,
        separated,
        rows,
    }
}

#[test]
fn a_best_assertion_is_judged_on_the_winners_interval_with_three_outcomes() {
    let a = |text: &str| crate::sla::parse(text).unwrap();
    let r = ranking(vec![row("a", 10.0, 1.0, Pass), row("c", 20.0, 2.0, Pass)]);
    let outcome = |text: &str, r: &ConfigRanking| best_verdict(&a(text), Some(r)).outcome;
    assert_eq!(outcome("best.goodput_rate > 15/s", &r), Pass);
    assert_eq!(outcome("best.goodput_rate > 30/s", &r), Fail);
    assert_eq!(outcome("best.goodput_rate > 19/s", &r), Inconclusive);
    // An undecided configuration that could still meet it leaves a failure open.
    let open = ranking(vec![
        row("c", 20.0, 2.0, Pass),
        row("u", 40.0, 5.0, Inconclusive),
    ]);
    assert_eq!(outcome("best.goodput_rate > 30/s", &open), Inconclusive);
    // No decided configuration: undecided while one is, failed otherwise.
    let none = ranking(vec![row("u", 40.0, 5.0, Inconclusive)]);
    assert_eq!(outcome("best.goodput_rate > 1/s", &none), Inconclusive);
    let failed = ranking(vec![row("f", 40.0, 5.0, Fail)]);
    assert_eq!(outcome("best.goodput_rate > 1/s", &failed), Fail);
    assert_eq!(
        best_verdict(&a("best.goodput_rate > 1/s"), None).outcome,
        Fail
    );
}

#[test]
fn best_takes_only_figures_where_more_is_better() {
    let parsed = crate::sla::parse("best.sla_max_rate >= 20 req/s").unwrap();
    assert!(parsed.best && parsed.metric.name() == "sla_max_rate");
    let err = crate::sla::parse("best.ttft.p95 < 1s").unwrap_err();
    assert!(err.to_string().contains("not a figure"), "{err}");
    assert!(!crate::sla::parse("goodput_rate > 1/s").unwrap().best);
}
