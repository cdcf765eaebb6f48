use super::*;
use crate::metrics::{LoadPoint, ProfilePoint};

/// A sweep point at `clients` whose TPOT p90 is `tpot_ms`, NTPOT p90 `ntpot_ms`, delivering
/// `out_tps` output tokens/s.
fn point(clients: u32, tpot_ms: f64, ntpot_ms: f64, out_tps: f64) -> StageSummary {
    let mut s = StageSummary {
        name: format!("ladder@{clients}c"),
        profile: Some(ProfilePoint::planned(LoadPoint {
            group: "ladder".into(),
            kind: PointKind::Sweep,
            clients: Some(clients),
            ..LoadPoint::default()
        })),
        ..StageSummary::default()
    };
    for (m, v) in [
        (LatencyMetric::Tpot, tpot_ms),
        (LatencyMetric::Ntpot, ntpot_ms),
    ] {
        s.latency[m].count = 10;
        s.latency[m].p90 = v;
        s.latency[m].p50 = v / 2.0;
    }
    s.throughput.output_tokens_per_s = out_tps;
    s
}

#[test]
fn the_figures_are_one_over_the_p90s_and_the_throughput_over_the_gpus() {
    let mut s = point(1, 20.0, 25.0, 400.0);
    assert_eq!(tokens_per_s_user(&s), Some(50.0));
    assert_eq!(e2e_normalized(&s), Some(40.0));
    assert_eq!(output_per_gpu(&s), None, "no GPUs declared");
    s.planned.gpus = Some(8);
    assert_eq!(output_per_gpu(&s), Some(50.0));
    s.planned.gpus = Some(0);
    assert_eq!(output_per_gpu(&s), None, "zero GPUs is none declared");
    // No TPOT sample (answers of one token, a pooling API): no per-user speed.
    s.latency[LatencyMetric::Tpot].count = 0;
    assert_eq!(tokens_per_s_user(&s), None);
}

#[test]
fn a_sweeps_frontier_marks_the_point_that_buys_nothing() {
    let mut stages = vec![
        point(1, 10.0, 12.0, 100.0),
        point(2, 12.5, 15.0, 160.0),
        point(4, 20.0, 25.0, 200.0),
        // Past saturation: slower for each user and less in all than 4 clients.
        point(8, 40.0, 50.0, 190.0),
    ];
    for s in &mut stages {
        s.planned.gpus = Some(2);
    }
    let all = frontiers(&stages);
    assert_eq!(all.len(), 1);
    let f = &all[0];
    assert_eq!((f.group.as_str(), f.gpus), ("ladder", Some(2)));
    let users: Vec<f64> = f.points.iter().map(|p| p.tokens_per_s_user).collect();
    assert_eq!(users, [100.0, 80.0, 50.0, 25.0]);
    let per_gpu: Vec<Option<f64>> = f.points.iter().map(|p| p.output_tokens_per_s_gpu).collect();
    assert_eq!(per_gpu, [Some(50.0), Some(80.0), Some(100.0), Some(95.0)]);
    let front: Vec<bool> = f.points.iter().map(|p| p.on_front).collect();
    assert_eq!(front, [true, true, true, false]);
    assert_eq!(f.points[3].dominated_by.as_deref(), Some("ladder@4c"));
    assert_eq!(
        f.points[1].e2e_normalized_interactivity,
        Some(1000.0 / 15.0)
    );
}

#[test]
fn stages_outside_a_sweep_or_without_tpot_make_no_frontier() {
    let mut lone = point(1, 10.0, 12.0, 100.0);
    lone.profile = None;
    assert!(frontiers(&[lone]).is_empty());
    let mut pooled = point(1, 10.0, 12.0, 100.0);
    pooled.latency[LatencyMetric::Tpot].count = 0;
    assert!(frontiers(&[pooled]).is_empty());
    // One point alone is its own front.
    let f = frontier(&[point(4, 10.0, 12.0, 100.0)], "ladder").unwrap();
    assert_eq!(f.points.len(), 1);
    assert!(f.points[0].on_front);
    assert_eq!(f.gpus, None);
}
