//! What a run's shaping proxy did (`target.network` in `results.json`): the link it emulated,
//! how much it carried, the delays it planned and how far past its plan it delivered (its
//! own overhead, which a reader needs to trust the emulated delay). See `docs/network.md`.

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::protocol::NetworkShape;

/// The shaping proxy's account of a run. *Added in schema 3.*
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NetworkSummary {
    /// The link as the scenario states it (`loss` as a fraction).
    pub shape: NetworkShape,
    /// What a lost segment waited for (ms).
    pub retransmit_ms: f64,
    /// Connections the proxy carried.
    pub connections: u64,
    /// Segments (reads the proxy forwarded), client to server and server to client.
    pub segments_up: u64,
    pub segments_down: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// Segments drawn lost (each delivered `retransmit_ms` late).
    pub lost: u64,
    /// Mean of each segment's planned time in the proxy: delay, jitter, time queued behind
    /// the bandwidth cap, a loss's timeout, a new connection's handshake, the wait to keep
    /// order (ms).
    pub planned_delay_mean_ms: f64,
    /// How late segments were delivered past their plan (the proxy's own cost: its timer,
    /// its thread's scheduling, the write), ms.
    pub overshoot_ms: Overshoot,
    /// A fingerprint of the seeded draws the proxy made (those of the first segment each
    /// way of its first connection): equal in two runs, their links were drawn alike.
    pub schedule: String,
    /// Said when the overshoot is large beside the planned delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Percentiles of the overshoot (ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Overshoot {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// Counts what the proxy carries; one per proxy thread, written on its own thread only.
#[derive(Debug)]
pub struct NetworkTally {
    connections: u64,
    segments: [u64; 2],
    bytes: [u64; 2],
    lost: u64,
    planned_ns: u128,
    /// Overshoot in µs.
    overshoot: Histogram<u64>,
    /// The raw draws of the first connection's first segment up and down.
    first: [Option<u64>; 2],
}

/// The longest overshoot recorded (µs): past a minute the proxy is not shaping anything.
const MAX_OVERSHOOT_US: u64 = 60_000_000;

/// An overshoot p99 past this share of the mean planned delay earns a note...
const NOTE_SHARE: f64 = 0.25;
/// ...when it is past this too (ms): the proxy's timer alone rounds up to a millisecond, and
/// a busy machine's scheduling adds one or two more.
const NOTE_FLOOR_MS: f64 = 2.0;

impl Default for NetworkTally {
    fn default() -> Self {
        NetworkTally {
            connections: 0,
            segments: [0; 2],
            bytes: [0; 2],
            lost: 0,
            planned_ns: 0,
            overshoot: Histogram::new_with_bounds(1, MAX_OVERSHOOT_US, 2)
                .expect("valid histogram bounds"),
            first: [None; 2],
        }
    }
}

impl NetworkTally {
    pub fn connection(&mut self) {
        self.connections += 1;
    }

    /// A segment planned: `up` for client to server, its size, its planned time in the proxy
    /// and whether it was drawn lost.
    pub fn planned(&mut self, up: bool, bytes: usize, planned_ns: u64, lost: bool) {
        let d = usize::from(!up);
        self.segments[d] += 1;
        self.bytes[d] += bytes as u64;
        self.planned_ns += u128::from(planned_ns);
        self.lost += u64::from(lost);
    }

    /// The raw draws of a segment of the first connection: the first one each way is kept.
    pub fn first_draw(&mut self, up: bool, draw: u64) {
        self.first[usize::from(!up)].get_or_insert(draw);
    }

    /// The fingerprint of the first draws each way (`-` for a way that carried nothing).
    fn schedule(&self) -> String {
        let part = |d: Option<u64>| d.map_or_else(|| "-".to_string(), |d| format!("{d:016x}"));
        format!("{}{}", part(self.first[0]), part(self.first[1]))
    }

    /// A segment delivered `late_ns` past its plan.
    pub fn delivered(&mut self, late_ns: u64) {
        self.overshoot
            .saturating_record((late_ns / 1000).clamp(1, MAX_OVERSHOOT_US));
    }

    pub fn summary(&self, shape: NetworkShape) -> NetworkSummary {
        let segments = self.segments[0] + self.segments[1];
        let planned_delay_mean_ms = if segments == 0 {
            0.0
        } else {
            self.planned_ns as f64 / segments as f64 / 1e6
        };
        let ms = |us: u64| us as f64 / 1e3;
        let overshoot_ms = if self.overshoot.is_empty() {
            Overshoot::default()
        } else {
            Overshoot {
                p50: ms(self.overshoot.value_at_quantile(0.5)),
                p99: ms(self.overshoot.value_at_quantile(0.99)),
                max: ms(self.overshoot.max()),
            }
        };
        let note = (overshoot_ms.p99 > NOTE_FLOOR_MS
            && overshoot_ms.p99 > NOTE_SHARE * planned_delay_mean_ms)
            .then(|| {
                format!(
                    "the shaping proxy delivered late: overshoot p99 {:.1} ms is over {:.0} % \
                     of the planned {:.1} ms; the emulated delay is that much longer than \
                     asked (a busy machine?)",
                    overshoot_ms.p99,
                    NOTE_SHARE * 100.0,
                    planned_delay_mean_ms
                )
            });
        NetworkSummary {
            shape,
            retransmit_ms: NetworkShape::RETRANSMIT.as_secs_f64() * 1e3,
            connections: self.connections,
            segments_up: self.segments[0],
            segments_down: self.segments[1],
            bytes_up: self.bytes[0],
            bytes_down: self.bytes[1],
            lost: self.lost,
            planned_delay_mean_ms,
            overshoot_ms,
            schedule: self.schedule(),
            note,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{Duration, Percent};

    fn shape() -> NetworkShape {
        NetworkShape {
            delay: Duration::from_millis(25),
            jitter: Duration::ZERO,
            bandwidth: None,
            loss: Percent(0.0),
        }
    }

    #[test]
    fn a_tally_sums_both_ways_and_notes_a_late_proxy() {
        let mut t = NetworkTally::default();
        t.connection();
        t.planned(true, 100, 25_000_000, false);
        t.planned(false, 300, 225_000_000, true);
        t.delivered(500_000);
        t.delivered(700_000);
        let s = t.summary(shape());
        assert_eq!((s.segments_up, s.segments_down), (1, 1));
        assert_eq!((s.bytes_up, s.bytes_down, s.lost), (100, 300, 1));
        assert!((s.planned_delay_mean_ms - 125.0).abs() < 1e-9);
        assert!(s.overshoot_ms.max >= 0.69 && s.overshoot_ms.max <= 0.71);
        assert!(s.note.is_none());
        t.delivered(40_000_000);
        t.delivered(40_000_000);
        let late = t.summary(shape());
        assert!(late.note.is_some_and(|n| n.contains("delivered late")));
    }

    #[test]
    fn the_schedule_is_the_first_draws_each_way() {
        let mut t = NetworkTally::default();
        assert_eq!(t.summary(shape()).schedule, "--");
        t.first_draw(true, 1);
        t.first_draw(true, 2);
        assert_eq!(t.summary(shape()).schedule, "0000000000000001-");
        t.first_draw(false, 0xab);
        assert_eq!(
            t.summary(shape()).schedule,
            "000000000000000100000000000000ab"
        );
    }

    #[test]
    fn an_idle_proxy_reports_zeros() {
        let s = NetworkTally::default().summary(shape());
        assert_eq!(s.segments_up + s.segments_down, 0);
        assert_eq!(s.planned_delay_mean_ms, 0.0);
        assert_eq!(s.overshoot_ms, Overshoot::default());
        assert!(s.note.is_none());
    }
}
