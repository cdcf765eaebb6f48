//! Rate and concurrency searches, as plain decisions: the bounds and rules a scenario gives
//! ([`SearchSpec`]), the next load to probe from what the probes so far showed
//! ([`next_rate`], [`next_clients`], [`next_load`]), and why a search ended ([`StopReason`]).
//! Bracketing doubles the load from `from` until a probe fails (or `to` passes), then bisection
//! halves the bracket until `(fail − pass) / pass ≤ tolerance` (or, for client counts, the
//! bracket is adjacent), within the caps on probes and time. The runner runs the probes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::{Duration, Rate};

/// What a search varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchAxis {
    /// Open-loop Poisson rate (`rate from=… to=…`).
    #[default]
    Rate,
    /// Closed-loop client count (`concurrency from=… to=…`), searched over whole numbers.
    Concurrency,
}

impl SearchAxis {
    fn is_rate(&self) -> bool {
        *self == SearchAxis::Rate
    }
}

/// `search { rate from=… to=…; tolerance "5%"; max-probes 12; max-time "10m"; probe "20s" }`,
/// or `concurrency from=… to=…` in place of `rate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchSpec {
    /// Lowest load tried (the search starts here): a rate, or clients for a concurrency search.
    pub from: Rate,
    /// Highest load tried (a rate, or clients).
    pub to: Rate,
    /// Rate (default) or closed-loop concurrency; `from`/`to` count clients for the latter.
    #[serde(default, skip_serializing_if = "SearchAxis::is_rate")]
    pub axis: SearchAxis,
    /// Stop when `(fail − pass) / pass` is at most this (a fraction). Default 0.05.
    pub tolerance: f64,
    /// Most probes run. Default 12.
    pub max_probes: u32,
    /// Most total time spent probing (a probe that starts runs to its end). Default 10m.
    pub max_time: Duration,
    /// Length of one probe (open-loop Poisson, or closed loop). Default 20s.
    pub probe: Duration,
}

/// Why a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The bracket is within the tolerance (or adjacent client counts).
    #[default]
    Converged,
    /// The highest load tried still passed.
    UpperBoundPasses,
    /// The lowest load tried already failed.
    LowerBoundFails,
    /// `max-probes` probes ran.
    MaxProbes,
    /// `max-time` was spent.
    MaxTime,
    /// Ctrl-C or a signal stopped the run.
    Interrupted,
    /// A probe could not be planned.
    Error,
}

impl StopReason {
    /// The name results and reports use (`upper_bound_passes`).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Converged => "converged",
            StopReason::UpperBoundPasses => "upper_bound_passes",
            StopReason::LowerBoundFails => "lower_bound_fails",
            StopReason::MaxProbes => "max_probes",
            StopReason::MaxTime => "max_time",
            StopReason::Interrupted => "interrupted",
            StopReason::Error => "error",
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Chooses the next rate from what is known; `None` when the search is over (with why).
pub fn next_rate(
    spec: &SearchSpec,
    pass: Option<f64>,
    fail: Option<f64>,
    probed: usize,
) -> Result<f64, StopReason> {
    let (from, to) = (spec.from.per_sec(), spec.to.per_sec());
    let capped = probed >= spec.max_probes as usize;
    match (pass, fail) {
        (None, None) if capped => Err(StopReason::MaxProbes),
        (None, None) => Ok(from),
        (None, Some(_)) => Err(StopReason::LowerBoundFails),
        (Some(p), None) if p >= to => Err(StopReason::UpperBoundPasses),
        (Some(_), None) if capped => Err(StopReason::MaxProbes),
        (Some(p), None) => Ok((p * 2.0).min(to)),
        (Some(p), Some(f)) if (f - p) / p <= spec.tolerance => Err(StopReason::Converged),
        (Some(_), Some(_)) if capped => Err(StopReason::MaxProbes),
        (Some(p), Some(f)) => Ok((p + f) / 2.0),
    }
}

/// [`next_rate`] over whole client counts: doubling from `from`, bisection down to adjacent
/// counts (or the tolerance, whichever comes first).
pub fn next_clients(
    spec: &SearchSpec,
    pass: Option<u32>,
    fail: Option<u32>,
    probed: usize,
) -> Result<u32, StopReason> {
    let from = (spec.from.0.round() as u32).max(1);
    let to = (spec.to.0.round() as u32).max(from);
    let capped = probed >= spec.max_probes as usize;
    match (pass, fail) {
        (None, None) if capped => Err(StopReason::MaxProbes),
        (None, None) => Ok(from),
        (None, Some(_)) => Err(StopReason::LowerBoundFails),
        (Some(p), None) if p >= to => Err(StopReason::UpperBoundPasses),
        (Some(_), None) if capped => Err(StopReason::MaxProbes),
        (Some(p), None) => Ok(p.saturating_mul(2).min(to)),
        (Some(p), Some(f)) if f <= p + 1 => Err(StopReason::Converged),
        (Some(p), Some(f)) if f64::from(f - p) / f64::from(p) <= spec.tolerance => {
            Err(StopReason::Converged)
        }
        (Some(_), Some(_)) if capped => Err(StopReason::MaxProbes),
        (Some(p), Some(f)) => Ok(p + (f - p) / 2),
    }
}

/// The next load on the search's axis.
pub fn next_load(
    spec: &SearchSpec,
    pass: Option<f64>,
    fail: Option<f64>,
    probed: usize,
) -> Result<f64, StopReason> {
    match spec.axis {
        SearchAxis::Rate => next_rate(spec, pass, fail, probed),
        SearchAxis::Concurrency => {
            let whole = |v: Option<f64>| v.map(|x| x.round() as u32);
            next_clients(spec, whole(pass), whole(fail), probed).map(f64::from)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> SearchSpec {
        SearchSpec {
            from: Rate(1.0),
            to: Rate(100.0),
            axis: SearchAxis::Rate,
            tolerance: 0.05,
            max_probes: 30,
            max_time: Duration::from_secs_f64(60.0),
            probe: Duration::from_secs_f64(1.0),
        }
    }

    /// Drives `next_rate` against a server whose SLAs hold below `capacity`.
    fn simulate(s: &SearchSpec, capacity: f64) -> (Option<f64>, Option<f64>, StopReason, usize) {
        let (mut pass, mut fail, mut n) = (None, None, 0);
        loop {
            match next_rate(s, pass, fail, n) {
                Err(why) => return (pass, fail, why, n),
                Ok(r) => {
                    n += 1;
                    if r <= capacity {
                        pass = Some(pass.map_or(r, |p: f64| p.max(r)));
                    } else {
                        fail = Some(fail.map_or(r, |f: f64| f.min(r)));
                    }
                }
            }
        }
    }

    #[test]
    fn converges_within_tolerance_on_a_step_function() {
        for capacity in [1.5, 7.0, 33.3, 99.0] {
            let (pass, fail, why, n) = simulate(&spec(), capacity);
            let (p, f) = (pass.unwrap(), fail.unwrap());
            assert_eq!(why, StopReason::Converged);
            assert!(p <= capacity && capacity < f, "{p} {capacity} {f}");
            assert!((f - p) / p <= 0.05);
            assert!(n < 20, "{n} probes");
        }
    }

    #[test]
    fn bounds_and_caps_end_the_search() {
        assert_eq!(simulate(&spec(), 500.0).2, StopReason::UpperBoundPasses);
        let (pass, _, why, n) = simulate(&spec(), 0.5);
        assert_eq!((pass, why, n), (None, StopReason::LowerBoundFails, 1));
        let capped = SearchSpec {
            max_probes: 4,
            ..spec()
        };
        let (_, _, why, n) = simulate(&capped, 33.3);
        assert_eq!((why, n), (StopReason::MaxProbes, 4));
    }

    /// Drives `next_clients` against a server whose SLAs hold up to `capacity` clients.
    fn simulate_clients(
        s: &SearchSpec,
        capacity: u32,
    ) -> (Option<u32>, Option<u32>, StopReason, Vec<u32>) {
        let (mut pass, mut fail, mut probes) = (None, None, Vec::new());
        loop {
            match next_clients(s, pass, fail, probes.len()) {
                Err(why) => return (pass, fail, why, probes),
                Ok(c) => {
                    probes.push(c);
                    if c <= capacity {
                        pass = Some(pass.map_or(c, |p: u32| p.max(c)));
                    } else {
                        fail = Some(fail.map_or(c, |f: u32| f.min(c)));
                    }
                }
            }
        }
    }

    fn clients_spec(from: u32, to: u32, tolerance: f64) -> SearchSpec {
        SearchSpec {
            from: Rate(f64::from(from)),
            to: Rate(f64::from(to)),
            axis: SearchAxis::Concurrency,
            tolerance,
            ..spec()
        }
    }

    #[test]
    fn client_search_finds_the_exact_count_with_a_tiny_tolerance() {
        let s = clients_spec(1, 256, 0.001);
        for capacity in [1, 2, 3, 4, 5, 7, 13, 100, 255] {
            let (pass, fail, why, probes) = simulate_clients(&s, capacity);
            assert_eq!(why, StopReason::Converged, "{capacity}: {probes:?}");
            assert_eq!(pass, Some(capacity), "{probes:?}");
            assert_eq!(fail, Some(capacity + 1), "{probes:?}");
            // Whole counts only, never the same one twice.
            let mut seen = probes.clone();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), probes.len(), "{probes:?}");
            assert!(probes.len() <= 17, "{probes:?}");
        }
        // Doubling from `from`: 1, 2, 4, 8 then bisection between 4 and 8.
        let (_, _, _, probes) = simulate_clients(&s, 5);
        assert_eq!(probes, [1, 2, 4, 8, 6, 5]);
    }

    #[test]
    fn client_search_bounds_tolerance_and_caps() {
        let s = clients_spec(2, 64, 0.001);
        assert_eq!(simulate_clients(&s, 100).2, StopReason::UpperBoundPasses);
        assert_eq!(simulate_clients(&s, 64).0, Some(64));
        let (pass, _, why, probes) = simulate_clients(&s, 1);
        assert_eq!(
            (pass, why, probes),
            (None, StopReason::LowerBoundFails, vec![2])
        );
        // A 25 % tolerance stops once the bracket is within it.
        let (pass, fail, why, _) = simulate_clients(&clients_spec(1, 256, 0.25), 100);
        let (p, f) = (pass.unwrap(), fail.unwrap());
        assert_eq!(why, StopReason::Converged);
        assert!(
            p <= 100 && 100 < f && f64::from(f - p) / f64::from(p) <= 0.25,
            "{p}..{f}"
        );
        let capped = SearchSpec {
            max_probes: 3,
            ..clients_spec(1, 256, 0.001)
        };
        assert_eq!(simulate_clients(&capped, 50).2, StopReason::MaxProbes);
        assert_eq!(simulate_clients(&capped, 50).3.len(), 3);
    }
}
