//! A data set's `quality { … }` block: how its answers are scored against their records'
//! reference answers (`score`), and the checks that need no reference (repetition, refusals,
//! the token band; empty and cut answers always). The spec is the scenario's and the plan's;
//! [`QualityCheck`] is it compiled once per stage, and [`QualityCheck::check`] judges one
//! whole answer (docs/quality.md).

use std::collections::HashSet;

use infermeter_words::metrics::QualityMark;
use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::score::{self, JsonTop};

/// The most bytes of an answer the checks read: a longer answer is judged on its first
/// 64 KiB (and counted as clipped), so a hostile 10 MB answer costs what 64 KiB does.
pub const MAX_SCORED_BYTES: usize = 64 << 10;

/// A record's reference answers (JSONL `reference`: a string or a list of acceptable
/// strings) and its reference output length (`reference_tokens`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u32>,
}

/// How answers are scored (`score "number" tolerance=0.01`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ScoreSpec {
    /// Normalised exact match with a reference.
    Exact,
    /// The normalised answer contains a reference.
    Contains,
    /// The pattern matches the answer (its first group, when it has one and the record a
    /// reference, must equal the reference).
    Regex { pattern: String },
    /// The answer's last number within `tolerance` (absolute) or `relative` of the
    /// reference's.
    Number { tolerance: f64, relative: f64 },
    /// The multiple-choice letter (A–J) the answer picks is the reference's.
    Choice,
    /// The answer parses as JSON of this top-level type; needs no reference.
    Json {
        #[serde(rename = "type")]
        top: JsonTop,
    },
    /// ROUGE-L F1 against the best reference at least `threshold`.
    RougeL { threshold: f64 },
}

impl ScoreSpec {
    /// Its name, as KDL writes it and results show it.
    pub fn name(&self) -> &'static str {
        match self {
            ScoreSpec::Exact => "exact",
            ScoreSpec::Contains => "contains",
            ScoreSpec::Regex { .. } => "regex",
            ScoreSpec::Number { .. } => "number",
            ScoreSpec::Choice => "choice",
            ScoreSpec::Json { .. } => "json",
            ScoreSpec::RougeL { .. } => "rouge-l",
        }
    }

    /// Whether it judges an answer without a reference (every answer is then scored).
    pub fn needs_reference(&self) -> bool {
        match self {
            ScoreSpec::Json { .. } => false,
            ScoreSpec::Regex { pattern } => Regex::new(pattern).is_ok_and(|r| r.captures_len() > 1),
            _ => true,
        }
    }
}

/// `repetition ngram=4 share=0.5`: an answer whose repeated n-grams are more than `share` of
/// its n-grams is degenerate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepetitionSpec {
    pub ngram: u32,
    pub share: f64,
}

/// A data set's `quality` block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QualitySpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<ScoreSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition: Option<RepetitionSpec>,
    /// Refusal markers, matched case-insensitively anywhere in the answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refusal: Vec<String>,
    /// `tokens-band 0.1`: an answer's output tokens within ±10 % of its record's
    /// `reference_tokens` (MLPerf's rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_band: Option<f64>,
    /// `judge { … }`: an LLM judge scores a sample of the answers (docs/quality.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<super::JudgeSpec>,
}

/// One whole answer, as the checks see it.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    /// The answer's text, without the reasoning before it.
    pub text: &'a str,
    pub output_tokens: u32,
    /// `max_tokens` as sent.
    pub max_tokens: u32,
    /// The server said it stopped at the token budget (`finish_reason: length`).
    pub stopped_at_length: bool,
}

/// A [`QualitySpec`] compiled for a stage (its regex built once).
#[derive(Debug)]
pub struct QualityCheck {
    spec: QualitySpec,
    pattern: Option<Regex>,
    /// The refusal markers, lower-cased once.
    refusal: Vec<String>,
}

impl QualityCheck {
    /// Compiles `spec`; a bad pattern is the scenario's error already, so here it is only
    /// reported back.
    pub fn compile(spec: &QualitySpec) -> Result<Self, regex::Error> {
        let pattern = match &spec.score {
            Some(ScoreSpec::Regex { pattern }) => Some(Regex::new(pattern)?),
            _ => None,
        };
        Ok(QualityCheck {
            spec: spec.clone(),
            pattern,
            refusal: spec.refusal.iter().map(|m| m.to_lowercase()).collect(),
        })
    }

    /// What the checks find in one answer; `reference` is its record's.
    pub fn check(&self, answer: &Answer<'_>, reference: Option<&Reference>) -> QualityMark {
        let clipped = answer.text.len() > MAX_SCORED_BYTES;
        let text = clip(answer.text, MAX_SCORED_BYTES);
        let budget = answer.max_tokens > 0 && answer.output_tokens >= answer.max_tokens;
        let answers = reference.map_or(&[][..], |r| &r.answers[..]);
        QualityMark {
            correct: self.score(text, answers),
            empty: text.trim().is_empty(),
            cut: answer.stopped_at_length || budget,
            repetitive: self
                .spec
                .repetition
                .is_some_and(|r| repeated_share(text, r.ngram as usize) > r.share),
            refusal: !self.refusal.is_empty() && {
                let lower = text.to_lowercase();
                self.refusal.iter().any(|m| lower.contains(m.as_str()))
            },
            off_band: self.spec.tokens_band.and_then(|band| {
                let want = f64::from(reference?.tokens?);
                let got = f64::from(answer.output_tokens);
                Some((got - want).abs() > band * want)
            }),
            clipped,
            // Marked by the runner, which holds the baseline's answers.
            agrees: None,
        }
    }

    /// The scorer's judgement, `None` when it needs a reference and there is none.
    fn score(&self, text: &str, answers: &[String]) -> Option<bool> {
        let spec = self.spec.score.as_ref()?;
        let scored = match (&self.pattern, answers.is_empty()) {
            (Some(p), _) => p.captures_len() == 1 || !answers.is_empty(),
            (None, true) => !spec.needs_reference(),
            (None, false) => true,
        };
        if !scored {
            return None;
        }
        Some(match spec {
            ScoreSpec::Exact => score::exact(text, answers),
            ScoreSpec::Contains => score::contains(text, answers),
            ScoreSpec::Regex { .. } => self
                .pattern
                .as_ref()
                .is_some_and(|p| score::regex(p, text, answers)),
            ScoreSpec::Number {
                tolerance,
                relative,
            } => score::number(text, answers, *tolerance, *relative),
            ScoreSpec::Choice => score::choice(text, answers),
            ScoreSpec::Json { top } => score::json(text, *top),
            ScoreSpec::RougeL { threshold } => score::rouge_l(text, answers) >= *threshold,
        })
    }
}

/// `text`'s first `max` bytes, cut back to a character boundary.
fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The share of the answer's whitespace-token n-grams that repeat one seen before in it
/// (0 for an answer shorter than two n-grams).
pub fn repeated_share(text: &str, n: usize) -> f64 {
    let n = n.max(1);
    let tokens: Vec<&str> = text.split_whitespace().collect();
    if tokens.len() < n + 1 {
        return 0.0;
    }
    let grams = tokens.len() + 1 - n;
    let mut seen: HashSet<&[&str]> = HashSet::with_capacity(grams);
    let repeats = tokens.windows(n).filter(|w| !seen.insert(*w)).count();
    repeats as f64 / grams as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(text: &str) -> Answer<'_> {
        Answer {
            text,
            output_tokens: 10,
            max_tokens: 100,
            stopped_at_length: false,
        }
    }

    fn reference(answers: &[&str], tokens: Option<u32>) -> Reference {
        Reference {
            answers: answers.iter().map(|s| s.to_string()).collect(),
            tokens,
        }
    }

    #[test]
    fn every_scorer_is_named_in_the_vocabulary() {
        let specs = [
            ScoreSpec::Exact,
            ScoreSpec::Contains,
            ScoreSpec::Regex {
                pattern: "x".into(),
            },
            ScoreSpec::Number {
                tolerance: 0.0,
                relative: 0.0,
            },
            ScoreSpec::Choice,
            ScoreSpec::Json { top: JsonTop::Any },
            ScoreSpec::RougeL { threshold: 0.5 },
        ];
        let names: Vec<&str> = specs.iter().map(ScoreSpec::name).collect();
        assert_eq!(names, infermeter_words::metrics::SCORERS);
    }

    #[test]
    fn scored_only_with_a_reference_when_the_scorer_needs_one() {
        let spec = QualitySpec {
            score: Some(ScoreSpec::Number {
                tolerance: 0.0,
                relative: 0.0,
            }),
            ..QualitySpec::default()
        };
        let q = QualityCheck::compile(&spec).unwrap();
        let r = reference(&["42"], None);
        assert_eq!(q.check(&answer("It is 42."), Some(&r)).correct, Some(true));
        assert_eq!(q.check(&answer("It is 41."), Some(&r)).correct, Some(false));
        assert_eq!(q.check(&answer("It is 42."), None).correct, None);
        let json = QualitySpec {
            score: Some(ScoreSpec::Json {
                top: JsonTop::Object,
            }),
            ..QualitySpec::default()
        };
        let q = QualityCheck::compile(&json).unwrap();
        assert_eq!(q.check(&answer("{}"), None).correct, Some(true));
    }

    #[test]
    fn checks_without_a_reference() {
        let spec = QualitySpec {
            repetition: Some(RepetitionSpec {
                ngram: 3,
                share: 0.5,
            }),
            refusal: vec!["I can't".into()],
            tokens_band: Some(0.1),
            ..QualitySpec::default()
        };
        let q = QualityCheck::compile(&spec).unwrap();
        let looped = "the answer is ".repeat(50);
        assert!(q.check(&answer(&looped), None).repetitive);
        assert!(!q.check(&answer("a b c d e f g h"), None).repetitive);
        assert!(q.check(&answer("Sorry, I CAN'T help."), None).refusal);
        assert!(q.check(&answer("  \n"), None).empty);
        let mut cut = answer("x");
        cut.output_tokens = 100;
        assert!(q.check(&cut, None).cut);
        let r = reference(&[], Some(10));
        assert_eq!(q.check(&answer("x"), Some(&r)).off_band, Some(false));
        let r = reference(&[], Some(20));
        assert_eq!(q.check(&answer("x"), Some(&r)).off_band, Some(true));
        assert_eq!(q.check(&answer("x"), None).off_band, None);
    }

    #[test]
    fn a_huge_answer_is_clipped_not_read_whole() {
        let spec = QualitySpec {
            score: Some(ScoreSpec::Contains),
            repetition: Some(RepetitionSpec {
                ngram: 4,
                share: 0.5,
            }),
            ..QualitySpec::default()
        };
        let q = QualityCheck::compile(&spec).unwrap();
        let mut text = "é".repeat(MAX_SCORED_BYTES);
        text.push_str(" needle");
        let mark = q.check(&answer(&text), Some(&reference(&["needle"], None)));
        assert!(mark.clipped);
        assert_eq!(mark.correct, Some(false), "past the bytes scored");
    }

    #[test]
    fn repeated_share_of_ngrams() {
        assert_eq!(repeated_share("", 4), 0.0);
        assert_eq!(repeated_share("a b c d", 4), 0.0);
        assert!(repeated_share(&"x y ".repeat(100), 2) > 0.95);
    }
}
