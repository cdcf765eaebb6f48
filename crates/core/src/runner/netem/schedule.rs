//! When each segment the proxy reads is delivered: pure arithmetic on nanoseconds since the
//! proxy started, so it is tested without sockets or clocks.
//!
//! One [`Lane`] per direction of each connection. A segment of `n` bytes read at `arrival`
//! first waits for the link (the lane's bandwidth: it is serialised after the previous
//! segment, `n × 8 / rate` seconds), then travels `delay + jitter`, where the jitter is a
//! uniform draw in `0..jitter`; a segment drawn "lost" comes a retransmission timeout later,
//! as TCP would deliver it after a loss. Bytes never overtake each other: a segment is
//! delivered no sooner than the one before it (`max(previous, planned)`). The draws come from
//! a stream keyed by the scenario's seed, the connection's number and the direction, so the
//! same seed plans the same delays for the same segments.

use crate::protocol::NetworkShape;

/// Which way a lane carries bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server: requests.
    Up = 0,
    /// Server to client: answers.
    Down = 1,
}

/// One direction of one connection's schedule.
#[derive(Debug, Clone)]
pub struct Lane {
    delay_ns: u64,
    jitter_ns: u64,
    /// Nanoseconds a byte takes on the link; 0 without a bandwidth cap.
    ns_per_byte: f64,
    /// A draw below this (out of 2^53) is a loss.
    loss_below: u64,
    retransmit_ns: u64,
    rng: u64,
    /// When the link is next free to serialise a segment.
    link_free: u64,
    /// When the previous segment was delivered.
    last: u64,
}

/// A segment's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planned {
    /// When it is to be delivered, ns since the proxy started.
    pub at: u64,
    /// Whether it was drawn lost (and so carries the retransmission timeout).
    pub lost: bool,
    /// The raw draws it was planned with, whatever the settings made of them: what the
    /// result's schedule fingerprint is made of.
    pub draw: u64,
}

/// 2^53: draws are 53-bit fractions.
const UNIT: u64 = 1 << 53;

impl Lane {
    pub fn new(shape: &NetworkShape, seed: u64, conn: u64, dir: Direction) -> Lane {
        // Keyed like the plan's streams (`plan/seed.rs`): a mix of the seed and the lane's
        // coordinates, so each lane's draws are independent of every other's.
        let mut key = seed ^ 0x6E65_7465_6D00_0000 ^ conn.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        key ^= dir as u64 * 0xD1B5_4A32_D192_ED03;
        let rng = splitmix64(&mut key);
        Lane {
            delay_ns: shape.delay.as_nanos(),
            jitter_ns: shape.jitter.as_nanos(),
            ns_per_byte: shape
                .bandwidth
                .map_or(0.0, |b| 8e9 / b.bits_per_sec() as f64),
            loss_below: (shape.loss.0.clamp(0.0, 1.0) * UNIT as f64) as u64,
            retransmit_ns: NetworkShape::RETRANSMIT.as_nanos() as u64,
            rng,
            link_free: 0,
            last: 0,
        }
    }

    /// Plans a segment of `bytes` read at `arrival` (ns since the proxy started).
    pub fn plan(&mut self, arrival: u64, bytes: usize) -> Planned {
        let start = arrival.max(self.link_free);
        let on_link = (bytes as f64 * self.ns_per_byte).round() as u64;
        let sent = start.saturating_add(on_link);
        self.link_free = sent;
        let (jitter, lost, draw) = self.draw();
        let retransmit = if lost { self.retransmit_ns } else { 0 };
        let at = sent
            .saturating_add(self.delay_ns)
            .saturating_add(jitter)
            .saturating_add(retransmit)
            .max(self.last);
        self.last = at;
        Planned { at, lost, draw }
    }

    /// The next segment's jitter (ns), whether it is lost, and the raw draws. Both are
    /// drawn for every segment, whatever the settings, so a lane's stream does not shift
    /// when one is zero.
    fn draw(&mut self) -> (u64, bool, u64) {
        let j = splitmix64(&mut self.rng) >> 11;
        let l = splitmix64(&mut self.rng) >> 11;
        let jitter = ((j as u128 * self.jitter_ns as u128) >> 53) as u64;
        (jitter, l < self.loss_below, j ^ l.rotate_left(32))
    }
}

/// SplitMix64: a fast, well-mixed generator, the same the plan's seeds use.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{Bandwidth, Duration, Percent};

    const MS: u64 = 1_000_000;

    fn shape(delay_ms: u64, jitter_ms: u64, bits: Option<u64>, loss: f64) -> NetworkShape {
        NetworkShape {
            delay: Duration::from_millis(delay_ms),
            jitter: Duration::from_millis(jitter_ms),
            bandwidth: bits.map(|b| Bandwidth::from_bits_per_sec(b).unwrap()),
            loss: Percent(loss),
        }
    }

    #[test]
    fn a_delay_alone_shifts_every_segment() {
        let mut lane = Lane::new(&shape(25, 0, None, 0.0), 7, 0, Direction::Up);
        for t in [0, 3 * MS, 100 * MS] {
            let p = lane.plan(t, 1000);
            assert_eq!(p.at, t + 25 * MS);
            assert!(!p.lost);
        }
    }

    #[test]
    fn jitter_stays_in_range_and_never_reorders() {
        let mut lane = Lane::new(&shape(10, 40, None, 0.0), 1, 3, Direction::Down);
        let mut last = 0;
        let mut spread = (u64::MAX, 0);
        for i in 0..2000u64 {
            let arrival = i * 100_000;
            let p = lane.plan(arrival, 100);
            assert!(p.at >= last, "reordered at {i}");
            assert!(p.at >= arrival + 10 * MS);
            let extra = p.at - arrival;
            spread = (spread.0.min(extra), spread.1.max(extra));
            last = p.at;
        }
        // Segments 0.1 ms apart with up to 40 ms of jitter: the order rule holds many back,
        // but no segment comes later than its arrival plus delay plus the whole jitter.
        assert!(spread.1 <= 50 * MS, "{spread:?}");
        assert!(spread.0 >= 10 * MS);
    }

    #[test]
    fn bandwidth_serialises_segments() {
        // 8 Mbit/s is 1 byte per µs: 1000 bytes take 1 ms on the link.
        let mut lane = Lane::new(&shape(0, 0, Some(8_000_000), 0.0), 0, 0, Direction::Down);
        let first = lane.plan(0, 1000);
        let second = lane.plan(0, 1000);
        assert_eq!(first.at, MS);
        assert_eq!(second.at, 2 * MS);
        // A segment that comes once the link is idle again waits only its own time.
        assert_eq!(lane.plan(10 * MS, 1000).at, 11 * MS);
        // A megabyte at 8 Mbit/s: one second, whatever its segments.
        let mut lane = Lane::new(&shape(5, 0, Some(8_000_000), 0.0), 0, 0, Direction::Down);
        let end = (0..64).map(|_| lane.plan(0, 16_384)).last().unwrap();
        assert_eq!(end.at, 1_048_576_000 + 5 * MS);
    }

    #[test]
    fn a_lost_segment_comes_a_retransmission_timeout_late() {
        let mut lane = Lane::new(&shape(20, 0, None, 0.5), 42, 0, Direction::Up);
        let plans: Vec<Planned> = (0..1000).map(|i| lane.plan(i * 1000 * MS, 10)).collect();
        let lost = plans.iter().filter(|p| p.lost).count();
        // Half drawn lost, give or take six standard deviations.
        assert!((405..=595).contains(&lost), "{lost}");
        for (i, p) in plans.iter().enumerate() {
            let expected = i as u64 * 1000 * MS + 20 * MS + if p.lost { 200 * MS } else { 0 };
            assert_eq!(p.at, expected);
        }
    }

    #[test]
    fn the_same_seed_plans_the_same_delays() {
        let s = shape(5, 20, Some(100_000_000), 0.1);
        let run = |seed, conn, dir| {
            let mut lane = Lane::new(&s, seed, conn, dir);
            (0..100)
                .map(|i| lane.plan(i * MS, 1500))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(9, 2, Direction::Up), run(9, 2, Direction::Up));
        assert_ne!(run(9, 2, Direction::Up), run(10, 2, Direction::Up));
        assert_ne!(run(9, 2, Direction::Up), run(9, 3, Direction::Up));
        assert_ne!(run(9, 2, Direction::Up), run(9, 2, Direction::Down));
    }

    #[test]
    fn extreme_values_saturate_instead_of_overflowing() {
        let mut lane = Lane::new(&shape(60_000, 60_000, Some(1), 0.5), 0, 0, Direction::Up);
        let p = lane.plan(u64::MAX - 5, usize::MAX);
        assert_eq!(p.at, u64::MAX);
        assert_eq!(lane.plan(0, 1).at, u64::MAX);
    }
}
