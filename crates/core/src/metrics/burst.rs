//! Responses that reached the client in one burst: every gap between their content chunks
//! under [`BURST_GAP_US`], closer than any engine decodes a token, so the tokens were read
//! together (the client read late, or a proxy or the server held them and sent them at
//! once). Such a response's TPOT is near zero, a pace of delivery, not of decoding, and a
//! handful of them pulls the stage's TPOT down. The stage says so when leaving them out moves
//! its TPOT mean by [`BURST_NOTE_CHANGE`] or more, whatever their share (see docs/metrics.md,
//! "Responses read in one burst").

use super::dist::Dist;

/// Gaps between two content chunks closer than this (µs) were read together: no engine
/// decodes a token in 0.1 ms, and chunks read from one socket read are microseconds apart.
pub const BURST_GAP_US: u64 = 100;

/// How much leaving the burst responses out must move the TPOT mean (a fraction) for the
/// note: 2 %, a fifth of the 10 % gap the client-versus-server TPOT note waits for, and
/// above what a run-to-run repeat of the same stage moves a TPOT mean on a quiet machine.
pub const BURST_NOTE_CHANGE: f64 = 0.02;

/// Counts a stage's responses delivered in one burst, and their TPOT.
#[derive(Debug, Clone, Copy, Default)]
pub struct BurstAcc {
    /// Responses with a TPOT (two tokens or more, streamed).
    responses: u64,
    /// Of them, those whose every chunk gap was under [`BURST_GAP_US`].
    burst: u64,
    /// The burst responses' TPOTs, summed (ns).
    burst_tpot_ns: u128,
}

impl BurstAcc {
    /// One successful response: its chunk gaps (how many, the longest, µs) and its TPOT.
    pub fn record(&mut self, gaps: usize, max_gap_us: u64, tpot_ns: Option<u64>) {
        let Some(tpot) = tpot_ns else { return };
        self.responses += 1;
        if gaps > 0 && max_gap_us < BURST_GAP_US {
            self.burst += 1;
            self.burst_tpot_ns += u128::from(tpot);
        }
    }

    /// Takes in another aggregator's responses (integer sums, so exact).
    pub fn merge(&mut self, o: &BurstAcc) {
        self.responses += o.responses;
        self.burst += o.burst;
        self.burst_tpot_ns += o.burst_tpot_ns;
    }

    /// The stage's note when its burst responses move the TPOT mean (`tpot`, ms) by
    /// [`BURST_NOTE_CHANGE`] or more; `None` otherwise.
    pub fn note(&self, tpot: &Dist) -> Option<String> {
        let rest = tpot.count.checked_sub(self.burst).filter(|n| *n > 0)?;
        if self.burst == 0 {
            return None;
        }
        let burst_ms = self.burst_tpot_ns as f64 / 1e6;
        let without = (tpot.mean * tpot.count as f64 - burst_ms) / rest as f64;
        if without <= 0.0 {
            return None;
        }
        let change = tpot.mean / without - 1.0;
        if change.abs() < BURST_NOTE_CHANGE {
            return None;
        }
        Some(format!(
            "{} of {} responses ({:.1} %) reached the client in one burst (every chunk gap under \
             {:.1} ms): the TPOT mean is {:.2} ms with them, {:.2} ms without ({:+.1} %); their \
             tokens were read together (a late client, or a server or proxy that held them), \
             so their TPOT is the pace of delivery, not of decoding",
            self.burst,
            self.responses,
            self.burst as f64 / self.responses.max(1) as f64 * 100.0,
            BURST_GAP_US as f64 / 1e3,
            tpot.mean,
            without,
            change * 100.0
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` responses with a 10 ms TPOT and gaps of 10 ms, then `k` read in one burst.
    fn stage(n: u64, k: u64) -> (BurstAcc, Dist) {
        let mut acc = BurstAcc::default();
        for _ in 0..n {
            acc.record(15, 10_000, Some(10_000_000));
        }
        for _ in 0..k {
            acc.record(15, 20, Some(20_000));
        }
        let tpot = Dist {
            count: n + k,
            mean: (n as f64 * 10.0 + k as f64 * 0.02) / (n + k) as f64,
            ..Dist::default()
        };
        (acc, tpot)
    }

    #[test]
    fn a_few_responses_in_one_burst_that_move_tpot_are_noted() {
        // 13 of 140 in one burst: the TPOT mean 9 % low, under the 10 % of the TPOT note.
        let (acc, tpot) = stage(127, 13);
        let note = acc.note(&tpot).expect("noted");
        assert!(note.starts_with("13 of 140 responses (9.3 %)"), "{note}");
        assert!(note.contains("-9.3 %"), "{note}");
        assert!(note.contains("10.00 ms without"), "{note}");
    }

    #[test]
    fn bursts_that_move_nothing_measurably_are_not() {
        // 1 in 100: the mean moves 1 %.
        let (acc, tpot) = stage(99, 1);
        assert!(acc.note(&tpot).is_none());
        let (acc, tpot) = stage(100, 0);
        assert!(acc.note(&tpot).is_none());
        // Every response in one burst: nothing left to compare with.
        let (acc, tpot) = stage(0, 10);
        assert!(acc.note(&tpot).is_none());
        // A response without a TPOT (one token) is not counted.
        let mut acc = BurstAcc::default();
        acc.record(0, 0, None);
        assert_eq!(acc.responses, 0);
    }
}
