//! `warmup until="stable"`: while the warm-up's closed-loop workers send, check the stability
//! rule every `check-every` — on the GPU telemetry when there is some, else on the collector's
//! recent TTFTs — and stop sending once it holds. Also says, afterwards, what ended the
//! warm-up and when ([`WarmupEnd`]).

use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::fold::RecentTtfts;
use crate::metrics::{WarmupEnd, WarmupEndReason};

use crate::telemetry::{
    StabilityBasis, StabilityVerdict, TelemetryHandle, WarmupUntil, assess_ttft,
};

/// What the warm-up watches.
pub(super) struct Watch<'a> {
    pub until: &'a WarmupUntil,
    pub telemetry: Option<&'a TelemetryHandle>,
}

/// What the checks found so far.
#[derive(Default)]
pub(super) struct WatchState {
    checks: u32,
    last: Option<StabilityVerdict>,
    /// Seconds since the warm-up start when the rule first held.
    stable_at_s: Option<f64>,
}

/// Checks the rule every `check_every`; once it holds, cancels `stop` (the workers' "stop
/// sending") and returns. Without a watch it never returns, so it can sit in a `select!`.
pub(super) async fn watch(
    w: Option<&Watch<'_>>,
    recent: RecentTtfts,
    stop: CancellationToken,
    t0: Instant,
    state: &mut WatchState,
) {
    let Some(w) = w else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(w.until.check_every.as_std()).await;
        let ttfts = recent.snapshot();
        let v = match w.telemetry {
            Some(t) => t.stability(&w.until.rule, &ttfts),
            None => assess_ttft(&w.until.rule, &ttfts),
        };
        tracing::debug!(stable = v.stable, "warm-up check: {}", v.reason);
        state.checks += 1;
        let stable = v.stable;
        state.last = Some(v);
        if stable {
            state.stable_at_s = Some(t0.elapsed().as_secs_f64());
            stop.cancel();
            return;
        }
    }
}

/// What ended the warm-up: the rule (on whichever basis it was judged), else an interrupt,
/// else its `max`. `now_s` is when sending stopped, in seconds since the warm-up start.
pub(super) fn finish(state: WatchState, interrupted: bool, now_s: f64) -> WarmupEnd {
    let reason = match (&state.last, state.stable_at_s) {
        (Some(v), Some(_)) => match v.basis {
            StabilityBasis::Gpu => WarmupEndReason::GpuStable,
            StabilityBasis::Ttft => WarmupEndReason::LatencyStable,
        },
        _ if interrupted => WarmupEndReason::Interrupted,
        _ => WarmupEndReason::MaxDuration,
    };
    WarmupEnd {
        reason,
        at_s: state.stable_at_s.unwrap_or(now_s),
        checks: state.checks,
        detail: state.last.map_or_else(
            || "no stability check ran before the warm-up ended".to_string(),
            |v| v.reason,
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::telemetry::StabilityRule;

    fn until(cv: f64, every_ms: u64) -> WarmupUntil {
        WarmupUntil {
            rule: StabilityRule {
                ttft_cv_threshold: cv,
                ..StabilityRule::default()
            },
            check_every: crate::units::Duration::from_millis(every_ms),
        }
    }

    fn ring(values: &[f64]) -> RecentTtfts {
        let r = RecentTtfts::default();
        r.extend(values);
        r
    }

    #[tokio::test]
    async fn steady_ttfts_end_the_warmup_as_latency_stable() {
        let u = until(0.1, 10);
        let w = Watch {
            until: &u,
            telemetry: None,
        };
        let stop = CancellationToken::new();
        let mut state = WatchState::default();
        let recent = ring(&[
            100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 100.2, 99.8, 100.1, 99.9,
        ]);
        let t0 = Instant::now();
        tokio::time::timeout(
            Duration::from_secs(30),
            watch(Some(&w), recent, stop.clone(), t0, &mut state),
        )
        .await
        .expect("the rule holds on the first check");
        assert!(stop.is_cancelled(), "sending is told to stop");
        let end = finish(state, false, 99.0);
        assert_eq!(end.reason, WarmupEndReason::LatencyStable);
        assert_eq!(end.checks, 1);
        assert!(end.at_s < 99.0, "the moment it held, not the later now");
        assert!(
            end.detail.contains("coefficient of variation"),
            "{}",
            end.detail
        );
    }

    #[tokio::test]
    async fn noisy_ttfts_keep_it_going() {
        let u = until(0.1, 5);
        let w = Watch {
            until: &u,
            telemetry: None,
        };
        let stop = CancellationToken::new();
        let mut state = WatchState::default();
        let noisy: Vec<f64> = (0..20)
            .map(|i| if i % 2 == 0 { 50.0 } else { 150.0 })
            .collect();
        let t0 = Instant::now();
        let timed_out = tokio::time::timeout(
            Duration::from_millis(100),
            watch(Some(&w), ring(&noisy), stop.clone(), t0, &mut state),
        )
        .await
        .is_err();
        assert!(timed_out, "never stable");
        assert!(!stop.is_cancelled());
        assert!(state.checks >= 1);
        let end = finish(state, false, 2.0);
        assert_eq!(end.reason, WarmupEndReason::MaxDuration);
        assert_eq!(end.at_s, 2.0);
        assert!(end.detail.contains("> 0.10"), "{}", end.detail);
    }

    #[test]
    fn the_ttft_ring_keeps_only_the_newest() {
        let values: Vec<f64> = (0..200).map(f64::from).collect();
        let snap = ring(&values).snapshot();
        assert_eq!(snap.len(), super::super::fold::RECENT_TTFTS);
        assert_eq!(snap.last(), Some(&199.0));
        assert_eq!(snap[0], 200.0 - snap.len() as f64);
    }

    #[test]
    fn an_interrupt_or_no_check_is_said_so() {
        let end = finish(WatchState::default(), true, 0.5);
        assert_eq!(end.reason, WarmupEndReason::Interrupted);
        assert_eq!(end.checks, 0);
        assert!(end.detail.contains("no stability check"));
        let end = finish(WatchState::default(), false, 0.5);
        assert_eq!(end.reason, WarmupEndReason::MaxDuration);
    }

    /// Telemetry from one fake GPU at `clock` of 2000 MHz and a flat 70 °C, sampled every 20 ms.
    async fn fake_gpu(clock: f64) -> TelemetryHandle {
        use crate::telemetry::{
            FakeGpu, GpuDevice, GpuOpener, GpuReading, SourceConfig, Telemetry, TelemetryConfig,
        };
        let config = TelemetryConfig {
            interval: crate::units::Duration::from_millis(20),
            sources: vec![SourceConfig::Nvml {
                devices: None,
                required: true,
            }],
            ..TelemetryConfig::default()
        };
        let opener = move || -> GpuOpener {
            Box::new(move |_| {
                let reading = GpuReading {
                    temp_c: Some(70.0),
                    sm_clock_mhz: Some(clock),
                    sm_clock_max_mhz: Some(2000.0),
                    ..Default::default()
                };
                let fake = FakeGpu::new("0", vec![reading]);
                Ok(vec![Box::new(fake) as Box<dyn GpuDevice>])
            })
        };
        Telemetry::start_async_with_gpus(config, opener)
            .await
            .expect("fake GPU starts")
    }

    fn gpu_until() -> WarmupUntil {
        WarmupUntil {
            rule: StabilityRule {
                window: crate::units::Duration::from_millis(200),
                // TTFTs alone would already be stable: the GPU rule must be the one deciding.
                ttft_cv_threshold: 10.0,
                ..StabilityRule::default()
            },
            check_every: crate::units::Duration::from_millis(20),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_gpu_telemetry_the_gpu_rule_decides() {
        let t = fake_gpu(1950.0).await;
        let u = gpu_until();
        let w = Watch {
            until: &u,
            telemetry: Some(&t),
        };
        let stop = CancellationToken::new();
        let mut state = WatchState::default();
        let steady = ring(&[100.0; 20]);
        tokio::time::timeout(
            Duration::from_secs(30),
            watch(Some(&w), steady, stop.clone(), Instant::now(), &mut state),
        )
        .await
        .expect("steady clocks and temperature hold once the window is covered");
        let end = finish(state, false, 99.0);
        drop(t.finish().await);
        assert_eq!(end.reason, WarmupEndReason::GpuStable, "{}", end.detail);
        assert!(end.detail.contains("clock ratio"), "{}", end.detail);
        assert!(end.checks >= 2, "the first checks lack a full window");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_throttled_gpu_is_never_stable_even_with_steady_ttfts() {
        let t = fake_gpu(1600.0).await;
        let u = gpu_until();
        let w = Watch {
            until: &u,
            telemetry: Some(&t),
        };
        let stop = CancellationToken::new();
        let mut state = WatchState::default();
        let r = tokio::time::timeout(
            Duration::from_millis(600),
            watch(
                Some(&w),
                ring(&[100.0; 20]),
                stop.clone(),
                Instant::now(),
                &mut state,
            ),
        )
        .await;
        drop(t.finish().await);
        assert!(r.is_err() && !stop.is_cancelled());
        let end = finish(state, false, 0.6);
        assert_eq!(end.reason, WarmupEndReason::MaxDuration);
        // Either still filling the window (a very slow machine) or the clock verdict.
        assert!(
            end.detail.contains("clock ratio 0.80") || end.detail.contains("history"),
            "{}",
            end.detail
        );
    }

    #[tokio::test]
    async fn without_a_watch_it_never_ends() {
        let mut state = WatchState::default();
        let r = tokio::time::timeout(
            Duration::from_millis(20),
            watch(
                None,
                RecentTtfts::default(),
                CancellationToken::new(),
                Instant::now(),
                &mut state,
            ),
        )
        .await;
        assert!(r.is_err());
    }
}
