//! Speculative decoding as the server counts it: vLLM's counters (`vllm:spec_decode_*`, as
//! `vllm/v1/spec_decode/metrics.py` writes them), or SGLang's gauges (`sglang:spec_accept_*`)
//! where there are no counters; read at each scrape ([`SpecReading`]) and turned into a stage's
//! figures ([`SpecStageSummary`]) from the counters' increase over the stage.
//!
//! Our definitions (see docs/telemetry.md): the mean acceptance length is the tokens one
//! verification step yields, `1 + accepted / drafts` (the bonus token counted, as vLLM's
//! logs and SGLang's `spec_accept_length` do); the acceptance rate is `accepted / draft
//! tokens`; position `i`'s rate is the share of drafts whose position `i` was accepted. A
//! server's numbers are checked before they are used: a negative or non-finite counter is no
//! reading, and figures the counters cannot give (more accepted than proposed, a position
//! accepted more often than drafted) are left out with a note rather than shown.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::counter::{CounterDelta, Stat};
use super::expo::Exposition;

/// The most draft positions read from a page (vLLM's `num_speculative_tokens` is a handful;
/// each position is a figure in every output, so a page naming more is cut here).
pub const MAX_DRAFT_POSITIONS: usize = 64;

/// The speculative-decoding series of one scrape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SpecReading {
    /// Verification steps (vLLM's `spec_decode_num_drafts`), a counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drafts: Option<f64>,
    /// Draft tokens proposed, a counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_tokens: Option<f64>,
    /// Draft tokens accepted, a counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_tokens: Option<f64>,
    /// Accepted per draft position (NaN where the page had no valid value); kept for the
    /// stage's figures, not written with the series.
    #[serde(skip)]
    pub accepted_per_position: Vec<f64>,
    /// SGLang's own mean acceptance length gauge (recent steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_length_gauge: Option<f64>,
    /// SGLang's own acceptance rate gauge, 0..=1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_rate_gauge: Option<f64>,
}

impl SpecReading {
    /// vLLM's counters (named with `_total`, as `prometheus_client` writes a counter, or
    /// without); `None` when the page has none (no draft model).
    pub fn vllm(e: &Exposition) -> Option<SpecReading> {
        let per_pos = "vllm:spec_decode_num_accepted_tokens_per_pos";
        let r = SpecReading {
            drafts: counter(e, "vllm:spec_decode_num_drafts"),
            draft_tokens: counter(e, "vllm:spec_decode_num_draft_tokens"),
            accepted_tokens: counter(e, "vllm:spec_decode_num_accepted_tokens"),
            accepted_per_position: per_position(e, &format!("{per_pos}_total"))
                .or_else(|| per_position(e, per_pos))
                .unwrap_or_default(),
            ..SpecReading::default()
        };
        (r != SpecReading::default()).then_some(r)
    }

    /// SGLang's gauges; `None` when the page has none.
    pub fn sglang(e: &Exposition) -> Option<SpecReading> {
        let gauge = |name: &str| e.mean_first(&[name]).filter(|v| v.is_finite());
        // A length under one token is no step's (an idle engine's 0): that scrape's rate is
        // not one either.
        let length_page = gauge("sglang:spec_accept_length");
        let length = length_page.filter(|v| *v >= 1.0);
        let r = SpecReading {
            accept_length_gauge: length,
            accept_rate_gauge: gauge("sglang:spec_accept_rate")
                .filter(|v| (0.0..=1.0).contains(v))
                .filter(|_| length_page.is_none() || length.is_some()),
            ..SpecReading::default()
        };
        (r != SpecReading::default()).then_some(r)
    }
}

/// A counter summed over its label sets (engines); `None` when absent, or when any value is
/// negative or not finite (no counter is).
fn counter(e: &Exposition, name: &str) -> Option<f64> {
    let total = format!("{name}_total");
    [total.as_str(), name].into_iter().find_map(|n| {
        let mut sum = None::<f64>;
        for s in e.named(n) {
            if !s.value.is_finite() || s.value < 0.0 {
                return Some(None);
            }
            sum = Some(sum.unwrap_or(0.0) + s.value);
        }
        sum.map(Some)
    })?
}

/// The per-position counter by its `position` label (0-based); positions beyond
/// [`MAX_DRAFT_POSITIONS`] or unreadable are dropped, a bad value leaves its position NaN.
fn per_position(e: &Exposition, name: &str) -> Option<Vec<f64>> {
    let mut out: Vec<f64> = Vec::new();
    for s in e.named(name) {
        let Some(i) = s
            .labels
            .get("position")
            .and_then(|p| p.parse::<usize>().ok())
            .filter(|i| *i < MAX_DRAFT_POSITIONS)
        else {
            continue;
        };
        if out.len() <= i {
            out.resize(i + 1, 0.0);
        }
        out[i] = if s.value.is_finite() && s.value >= 0.0 {
            out[i] + s.value
        } else {
            f64::NAN
        };
    }
    (!out.is_empty()).then_some(out)
}

/// Where a stage's speculative-decoding figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SpecSource {
    /// The increase of the server's counters over the stage (vLLM).
    Counters,
    /// The server's own gauges, averaged over the stage's scrapes (SGLang).
    Gauges,
}

/// A stage's speculative decoding, as the server counted it. *Added in schema 3.*
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SpecStageSummary {
    pub source: SpecSource,
    /// Verification steps during the stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drafts: Option<f64>,
    /// Draft tokens proposed during the stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_tokens: Option<f64>,
    /// Draft tokens accepted during the stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_tokens: Option<f64>,
    /// Accepted over proposed draft tokens, 0..=1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_rate: Option<f64>,
    /// Tokens per verification step: 1 + accepted / drafts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_length: Option<f64>,
    /// Per draft position (from 0): the share of drafts whose position was accepted, 0..=1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance_rate_per_position: Vec<f64>,
    /// Times a counter went back during the stage (a server restart): its increase counts
    /// from zero there, as PromQL's `increase` does.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub counter_resets: u32,
    /// Figures left out because the server's counters contradict each other.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One endpoint's speculative decoding during one stage.
#[derive(Debug, Clone, Default)]
pub(super) struct SpecAcc {
    drafts: CounterDelta,
    draft_tokens: CounterDelta,
    accepted: CounterDelta,
    per_position: Vec<CounterDelta>,
    length_gauge: Stat,
    rate_gauge: Stat,
}

impl SpecAcc {
    pub(super) fn push(&mut self, r: Option<&SpecReading>) {
        let Some(r) = r else { return };
        self.drafts.push(r.drafts);
        self.draft_tokens.push(r.draft_tokens);
        self.accepted.push(r.accepted_tokens);
        let n = r.accepted_per_position.len().min(MAX_DRAFT_POSITIONS);
        if self.per_position.len() < n {
            self.per_position.resize_with(n, CounterDelta::default);
        }
        for (acc, v) in self.per_position.iter_mut().zip(&r.accepted_per_position) {
            acc.push(Some(*v));
        }
        self.length_gauge.push(r.accept_length_gauge);
        self.rate_gauge.push(r.accept_rate_gauge);
    }

    /// The stage's figures; `None` when the server reported no speculative decoding.
    pub(super) fn summary(&self) -> Option<SpecStageSummary> {
        let (drafts, proposed, accepted) = (
            self.drafts.increase(),
            self.draft_tokens.increase(),
            self.accepted.increase(),
        );
        if drafts.is_none() && proposed.is_none() && accepted.is_none() {
            return self.gauge_summary();
        }
        let mut s = SpecStageSummary {
            source: SpecSource::Counters,
            drafts,
            draft_tokens: proposed,
            accepted_tokens: accepted,
            acceptance_rate: None,
            acceptance_length: None,
            acceptance_rate_per_position: Vec::new(),
            counter_resets: self.drafts.resets + self.draft_tokens.resets + self.accepted.resets,
            notes: Vec::new(),
        };
        let over = |a: f64, b: f64| a > b * (1.0 + 1e-9);
        match (accepted, proposed) {
            (Some(a), Some(p)) if over(a, p) => s.notes.push(format!(
                "the server counted more accepted draft tokens ({a}) than proposed ({p}): \
                 acceptance figures left out"
            )),
            (Some(a), Some(p)) if p > 0.0 => s.acceptance_rate = Some(a / p),
            _ => {}
        }
        if let (Some(a), Some(d), true) = (accepted, drafts, s.notes.is_empty())
            && d > 0.0
        {
            s.acceptance_length = Some(1.0 + a / d);
        }
        s.acceptance_rate_per_position = self.per_position_rates(drafts, &mut s.notes);
        Some(s)
    }

    fn per_position_rates(&self, drafts: Option<f64>, notes: &mut Vec<String>) -> Vec<f64> {
        let Some(d) = drafts.filter(|d| *d > 0.0) else {
            return Vec::new();
        };
        let rates: Option<Vec<f64>> = self
            .per_position
            .iter()
            .map(|c| c.increase().map(|n| n / d))
            .collect();
        match rates {
            Some(r) if r.iter().all(|v| (0.0..=1.0 + 1e-9).contains(v)) => {
                r.into_iter().map(|v| v.min(1.0)).collect()
            }
            Some(_) => {
                notes.push(
                    "a draft position was accepted more often than drafts were verified: \
                     per-position rates left out"
                        .into(),
                );
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    fn gauge_summary(&self) -> Option<SpecStageSummary> {
        let (length, rate) = (self.length_gauge.mean(), self.rate_gauge.mean());
        (length.is_some() || rate.is_some()).then(|| SpecStageSummary {
            source: SpecSource::Gauges,
            drafts: None,
            draft_tokens: None,
            accepted_tokens: None,
            acceptance_rate: rate,
            acceptance_length: length,
            acceptance_rate_per_position: Vec::new(),
            counter_resets: 0,
            notes: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::expo::parse_exposition;

    fn page(drafts: &str, proposed: &str, accepted: &str, pos: [&str; 2]) -> SpecReading {
        let text = format!(
            "vllm:spec_decode_num_drafts_total{{model_name=\"m\"}} {drafts}\n\
             vllm:spec_decode_num_draft_tokens_total{{model_name=\"m\"}} {proposed}\n\
             vllm:spec_decode_num_accepted_tokens_total{{model_name=\"m\"}} {accepted}\n\
             vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name=\"m\",position=\"0\"}} {}\n\
             vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name=\"m\",position=\"1\"}} {}\n",
            pos[0], pos[1]
        );
        SpecReading::vllm(&parse_exposition(&text)).expect("a spec reading")
    }

    fn stage(readings: &[SpecReading]) -> Option<SpecStageSummary> {
        let mut acc = SpecAcc::default();
        for r in readings {
            acc.push(Some(r));
        }
        acc.summary()
    }

    #[test]
    fn figures_are_the_increase_over_the_stage() {
        let s = stage(&[
            page("10", "20", "10", ["6", "4"]),
            page("110", "220", "160", ["86", "74"]),
        ])
        .unwrap();
        assert_eq!(s.source, SpecSource::Counters);
        assert_eq!((s.drafts, s.draft_tokens), (Some(100.0), Some(200.0)));
        assert_eq!(s.acceptance_rate, Some(0.75));
        assert_eq!(s.acceptance_length, Some(2.5));
        assert_eq!(s.acceptance_rate_per_position, vec![0.8, 0.7]);
        assert!(s.notes.is_empty() && s.counter_resets == 0);
    }

    #[test]
    fn no_counters_no_figures() {
        let e = parse_exposition("vllm:num_requests_running 1\n");
        assert!(SpecReading::vllm(&e).is_none());
        assert!(SpecAcc::default().summary().is_none());
    }

    /// A hostile or broken page: negative and NaN counters are no reading, a counter that
    /// went back counts from zero and is flagged, contradictions are left out with a note.
    #[test]
    fn hostile_counters_give_no_nonsense() {
        let e = parse_exposition(
            "vllm:spec_decode_num_drafts_total -5\nvllm:spec_decode_num_draft_tokens_total NaN\n\
             vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"99999999999\"} 1\n",
        );
        assert!(SpecReading::vllm(&e).is_none());
        let reset = stage(&[
            page("100", "200", "150", ["80", "70"]),
            page("10", "20", "15", ["8", "7"]),
        ])
        .unwrap();
        assert_eq!(reset.counter_resets, 3);
        assert_eq!(reset.acceptance_rate, Some(0.75));
        let absurd = stage(&[
            page("0", "0", "0", ["0", "0"]),
            page("10", "20", "1e300", ["50", "NaN"]),
        ])
        .unwrap();
        assert_eq!(absurd.acceptance_rate, None);
        assert_eq!(absurd.acceptance_length, None);
        assert!(absurd.acceptance_rate_per_position.is_empty());
        assert!(!absurd.notes.is_empty(), "{absurd:?}");
        let json = serde_json::to_string(&absurd).unwrap();
        assert!(!json.contains("NaN") && !json.contains("inf"), "{json}");
    }

    #[test]
    fn sglang_gauges_are_averaged() {
        let read = |t: &str| SpecReading::sglang(&parse_exposition(t)).unwrap();
        let s = stage(&[
            read("sglang:spec_accept_length 3.0\nsglang:spec_accept_rate 0.6\n"),
            read("sglang:spec_accept_length 2.0\nsglang:spec_accept_rate 7\n"),
        ])
        .unwrap();
        // Idle: neither gauge is a reading.
        let idle = parse_exposition("sglang:spec_accept_length 0\nsglang:spec_accept_rate 0\n");
        assert!(SpecReading::sglang(&idle).is_none());
        assert_eq!(s.source, SpecSource::Gauges);
        assert_eq!(s.acceptance_length, Some(2.5));
        assert_eq!(s.acceptance_rate, Some(0.6));
    }
}
