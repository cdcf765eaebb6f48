//! Concurrency ramps: a closed loop whose client count grows from `from` to `to` over `over`,
//! one client at a time (linear) or in equal stairs. Each worker simply waits for its start
//! offset before its first request, so the ramp is fully described by those offsets.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::Duration;

/// When the workers of a closed loop start: the first `from` at once, the rest spread over
/// `over` (one more every `over / (to − from)`, or `steps` equal stairs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientRamp {
    pub from: u32,
    pub to: u32,
    pub over: Duration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<u32>,
}

impl ClientRamp {
    /// Nanoseconds after the stage start at which worker `k` (0-based) sends its first request.
    pub fn start_offset_ns(&self, k: u32) -> u64 {
        if k < self.from || self.to <= self.from {
            return 0;
        }
        let over = self.over.as_nanos() as f64;
        let span = f64::from(self.to - self.from);
        let f = match self.steps {
            // Worker `from + j` joins after j + 1 intervals, so the last one starts at `over`.
            None => f64::from(k - self.from + 1) / span,
            Some(n) => {
                // Stair i (of n, each over/n long) holds from + (to − from)·i/(n − 1) clients,
                // as a stepped rate ramp holds its rates; k joins on the first stair above it.
                let n = n.max(2);
                let stair = (1..n)
                    .find(|&i| {
                        let level = f64::from(self.from) + span * f64::from(i) / f64::from(n - 1);
                        level.round() > f64::from(k)
                    })
                    .unwrap_or(n - 1);
                f64::from(stair) / f64::from(n)
            }
        };
        (f * over).round() as u64
    }

    /// Clients running `t_ns` after the stage start.
    pub fn clients_at(&self, t_ns: u64) -> u32 {
        (0..self.to)
            .filter(|&k| self.start_offset_ns(k) <= t_ns)
            .count() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(from: u32, to: u32, secs: f64, steps: Option<u32>) -> ClientRamp {
        ClientRamp {
            from,
            to,
            over: Duration::from_secs_f64(secs),
            steps,
        }
    }

    #[test]
    fn linear_adds_one_client_per_interval() {
        let r = ramp(1, 5, 4.0, None);
        let offsets: Vec<u64> = (0..5).map(|k| r.start_offset_ns(k)).collect();
        assert_eq!(
            offsets,
            [
                0,
                1_000_000_000,
                2_000_000_000,
                3_000_000_000,
                4_000_000_000
            ]
        );
        assert_eq!(r.clients_at(0), 1);
        assert_eq!(r.clients_at(2_500_000_000), 3);
        assert_eq!(r.clients_at(4_000_000_000), 5);
        // Several clients at once from the start.
        let r = ramp(3, 4, 1.0, None);
        assert_eq!(r.clients_at(0), 3);
        assert_eq!(r.start_offset_ns(3), 1_000_000_000);
    }

    #[test]
    fn steps_hold_equal_stairs() {
        // 4 stairs of 1 s holding 1, 22, 43 and 64 clients.
        let r = ramp(1, 64, 4.0, Some(4));
        assert_eq!(r.clients_at(0), 1);
        assert_eq!(r.clients_at(999_999_999), 1);
        assert_eq!(r.clients_at(1_000_000_000), 22);
        assert_eq!(r.clients_at(2_000_000_000), 43);
        assert_eq!(r.clients_at(3_000_000_000), 64);
        assert_eq!(r.clients_at(u64::MAX), 64);
        // Offsets never decrease with the worker index.
        let offs: Vec<u64> = (0..64).map(|k| r.start_offset_ns(k)).collect();
        assert!(offs.windows(2).all(|w| w[0] <= w[1]));
    }
}
