//! What a stage's answers said, counted from each record's [`QualityMark`] (a data set's
//! `quality` block, docs/quality.md): how many were scored and judged correct, and how many
//! were empty, repetitive, refusals, cut by their token budget or outside their token band.
//! `quality` in results.json; `accuracy`, `repetition_rate`, `empty_rate` and `agreement` are
//! read from it, each a proportion with a Wilson interval.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::record::{ErrorKind, QualityMark, RequestRecord};

/// A stage's answer quality. *Added in schema 3 (0.3.0).*
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Quality {
    /// The data set's scorer (`exact`, `number`, …), when it scores answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scorer: Option<String>,
    /// Answers checked: every successful request, and those that failed for want of any
    /// content (`empty`).
    pub checked: u64,
    /// Answers the scorer judged (those whose record had a reference, or all of them for a
    /// scorer that needs none).
    pub scored: u64,
    /// Of those, judged correct.
    pub correct: u64,
    /// `correct / scored`, when any was scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<f64>,
    /// Its Wilson interval at the run's confidence, `[low, high]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy_interval: Option<[f64; 2]>,
    /// Answers without text.
    pub empty: u64,
    /// Answers that stopped at their token budget.
    pub cut: u64,
    /// Answers flagged repetitive (`repetition`).
    pub repetitive: u64,
    /// Answers holding a refusal marker (`refusal`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refusals: u64,
    /// Answers whose record gave `reference_tokens`, with `tokens-band` (`banded`), and
    /// those outside the band.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub banded: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub off_band: u64,
    /// Answers longer than the bytes scored, judged on their first 64 KiB.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub clipped: u64,
    /// The target sends `ignore_eos`: the model could not end its answers, so they run to
    /// their token budget and are cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_eos: bool,
    /// What an LLM judge scored of a sample of the answers (`judge { … }`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<super::JudgeTally>,
    /// How the answers agree with a baseline run's answers to the same prompts, when the run
    /// was given a baseline (`report { baseline … }`). *Added in schema 3 (0.3.0).*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement: Option<AgreementTally>,
}

/// A stage's answers against the baseline's answers to the same prompts (the same plan's
/// stage, request index and turn, asking the same data set record): `agreement` is
/// `identical / paired`. *Added in schema 3 (0.3.0).*
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgreementTally {
    /// Answers whose prompt the baseline answered too.
    pub paired: u64,
    /// Of them, identical to the baseline's answer (the whole answer's hash).
    pub identical: u64,
    /// `identical / paired`, when any was paired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// Its Wilson interval at the run's confidence, `[low, high]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
    /// Why no answer could be paired (the baseline kept no answers, ran another plan, or
    /// answered none of the stage's prompts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unpaired: Option<String>,
}

impl AgreementTally {
    fn add(&mut self, o: &AgreementTally) {
        self.paired += o.paired;
        self.identical += o.identical;
        if self.unpaired.is_none() {
            self.unpaired.clone_from(&o.unpaired);
        }
    }

    fn finish(mut self, confidence: f64) -> AgreementTally {
        self.share = (self.paired > 0).then(|| self.identical as f64 / self.paired as f64);
        self.interval = crate::stats::wilson(self.identical, self.paired, confidence)
            .ok()
            .flatten()
            .map(|(low, high)| [low, high]);
        if self.paired > 0 {
            self.unpaired = None;
        }
        self
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Quality {
    /// Adds one request's mark (none for a request the checks did not see).
    pub fn record(&mut self, r: &RequestRecord) {
        let mark = match (&r.quality, r.error) {
            (Some(m), _) => *m,
            // No content at all: an empty answer, though the client failed it.
            (None, Some(ErrorKind::Empty)) => QualityMark {
                empty: true,
                ..QualityMark::default()
            },
            _ => return,
        };
        self.checked += 1;
        if let Some(correct) = mark.correct {
            self.scored += 1;
            self.correct += u64::from(correct);
        }
        self.empty += u64::from(mark.empty);
        self.cut += u64::from(mark.cut);
        self.repetitive += u64::from(mark.repetitive);
        self.refusals += u64::from(mark.refusal);
        if let Some(off) = mark.off_band {
            self.banded += 1;
            self.off_band += u64::from(off);
        }
        self.clipped += u64::from(mark.clipped);
        if let Some(agrees) = mark.agrees {
            let a = self.agreement.get_or_insert_with(AgreementTally::default);
            a.paired += 1;
            a.identical += u64::from(agrees);
        }
    }

    /// Adds another summary's counts (rounds of a stage, shards of a run).
    pub fn add(&mut self, o: &Quality) {
        self.checked += o.checked;
        self.scored += o.scored;
        self.correct += o.correct;
        self.empty += o.empty;
        self.cut += o.cut;
        self.repetitive += o.repetitive;
        self.refusals += o.refusals;
        self.banded += o.banded;
        self.off_band += o.off_band;
        self.clipped += o.clipped;
        self.ignore_eos |= o.ignore_eos;
        if self.scorer.is_none() {
            self.scorer.clone_from(&o.scorer);
        }
        if let Some(j) = &o.judge {
            self.judge.get_or_insert_with(Default::default).add(j);
        }
        if let Some(a) = &o.agreement {
            self.agreement.get_or_insert_with(Default::default).add(a);
        }
    }

    /// Several summaries' counts added; absent when none has any.
    pub fn sum<'a>(
        parts: impl Iterator<Item = Option<&'a Quality>>,
        confidence: f64,
    ) -> Option<Quality> {
        let mut total: Option<Quality> = None;
        for q in parts.flatten() {
            total.get_or_insert_with(Quality::default).add(q);
        }
        total.map(|t| t.finish(confidence))
    }

    /// The counts with their accuracy and its interval, when any answer was checked.
    pub fn finish(mut self, confidence: f64) -> Quality {
        self.accuracy = (self.scored > 0).then(|| self.correct as f64 / self.scored as f64);
        self.accuracy_interval = crate::stats::wilson(self.correct, self.scored, confidence)
            .ok()
            .flatten()
            .map(|(low, high)| [low, high]);
        self.judge = self.judge.map(|j| j.finish(confidence));
        self.agreement = self.agreement.map(|a| a.finish(confidence));
        self
    }

    /// The share of checked answers with `count`, in percent (`None` before any).
    pub fn share_of_checked(&self, count: u64) -> Option<f64> {
        (self.checked > 0).then(|| count as f64 / self.checked as f64 * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(correct: Option<bool>, repetitive: bool) -> RequestRecord {
        RequestRecord {
            quality: Some(QualityMark {
                correct,
                repetitive,
                ..QualityMark::default()
            }),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn counts_and_accuracy_with_its_interval() {
        let mut q = Quality {
            scorer: Some("exact".into()),
            ..Quality::default()
        };
        for i in 0..100 {
            q.record(&marked(Some(i % 4 != 0), i % 10 == 0));
        }
        q.record(&marked(None, false));
        q.record(&RequestRecord {
            error: Some(ErrorKind::Empty),
            ..RequestRecord::default()
        });
        q.record(&RequestRecord {
            error: Some(ErrorKind::Timeout),
            ..RequestRecord::default()
        });
        let q = q.finish(0.95);
        assert_eq!((q.checked, q.scored, q.correct), (102, 100, 75));
        assert_eq!((q.repetitive, q.empty), (10, 1));
        assert_eq!(q.accuracy, Some(0.75));
        let [low, high] = q.accuracy_interval.unwrap();
        assert!(low < 0.75 && 0.75 < high && low > 0.6 && high < 0.85);
        let both = Quality::sum([Some(&q), Some(&q)].into_iter(), 0.95).unwrap();
        assert_eq!((both.scored, both.correct), (200, 150));
        assert!(both.accuracy_interval.unwrap()[0] > low);
    }

    #[test]
    fn agreement_counts_the_paired_answers_and_adds_across_rounds() {
        let mut q = Quality::default();
        for i in 0..50 {
            q.record(&RequestRecord {
                quality: Some(QualityMark {
                    // 40 paired, 30 of them identical; 10 the baseline did not answer.
                    agrees: (i < 40).then_some(i < 30),
                    ..QualityMark::default()
                }),
                ..RequestRecord::default()
            });
        }
        let q = q.finish(0.95);
        let a = q.agreement.clone().unwrap();
        assert_eq!((a.paired, a.identical, a.share), (40, 30, Some(0.75)));
        let [low, high] = a.interval.unwrap();
        assert!(low < 0.75 && 0.75 < high, "{low} {high}");
        let both = Quality::sum([Some(&q), Some(&q)].into_iter(), 0.95).unwrap();
        assert_eq!(both.agreement.unwrap().paired, 80);
        // No answer paired: no agreement at all, rather than a share of nothing.
        assert_eq!(Quality::default().finish(0.95).agreement, None);
    }
}
