//! Labels per request: the closed vocabulary of the ways a stage's requests are split
//! ([`Grouping`]: the model or adapter a request names, the traffic class it belongs to), one
//! stage's labels with their weights ([`Group`]), and one request's label in each grouping
//! ([`Labels`], indices, so a request carries no string). The scenario names the groups, the
//! plan draws each request's labels, the runner sends them, the metrics aggregate per label and
//! the SLA grammar selects one (`ttft.p95[model=lora-sql]`). A new grouping (per-URL results)
//! is a variant here.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a stage's requests are split into labelled parts.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Grouping {
    /// The model or adapter the request names (`model "lora-sql" weight=1` in a stage).
    Model,
    /// The traffic class the request belongs to (`class "interactive" weight=1 priority=0`).
    Class,
}

impl Grouping {
    pub const COUNT: usize = 2;
    /// The closed vocabulary, as written in KDL nodes and SLA selectors.
    pub const ALL: [Grouping; Grouping::COUNT] = [Grouping::Model, Grouping::Class];

    /// Const: a stage's table of children takes its `model` and `class` from here.
    pub const fn as_str(self) -> &'static str {
        match self {
            Grouping::Model => "model",
            Grouping::Class => "class",
        }
    }

    pub fn from_name(name: &str) -> Option<Grouping> {
        Grouping::ALL.into_iter().find(|g| g.as_str() == name)
    }
}

impl fmt::Display for Grouping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Longest label name: a model path (`org/model-name`) fits; a pasted document does not.
pub const MAX_LABEL_LEN: usize = 128;

/// Whether `name` may name a label: 1 to [`MAX_LABEL_LEN`] ASCII letters, digits and `._-/:`,
/// so that it reads the same in an SLA selector, a file name fragment and a report.
pub fn valid_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_LABEL_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/' | b':'))
}

/// One label of a stage's group: its name, its share of the requests, and for a class the
/// priority the server is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Label {
    pub name: String,
    /// Relative share of the stage's requests (≥ 1).
    pub weight: u32,
    /// A class's priority, sent as vLLM's `priority` body field (lower is served first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// A class's own data set (index into the plan's data sets), else the stage's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<usize>,
}

/// One grouping of a stage's requests with its labels, in the order written (at least one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Group {
    pub by: Grouping,
    pub labels: Vec<Label>,
}

impl Group {
    /// The label a uniform draw `u` in `[0, 1)` falls on, by weight.
    pub fn pick(&self, u: f64) -> u16 {
        let total: u64 = self.labels.iter().map(|l| u64::from(l.weight)).sum();
        let mut at = (u * total as f64) as u64;
        for (i, l) in self.labels.iter().enumerate() {
            if at < u64::from(l.weight) {
                return i as u16;
            }
            at -= u64::from(l.weight);
        }
        self.labels.len().saturating_sub(1) as u16
    }

    /// The index of the label named `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.labels.iter().position(|l| l.name == name)
    }
}

/// One request's label in each grouping its stage has (index into that [`Group`]'s labels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Labels([Option<u16>; Grouping::COUNT]);

impl Labels {
    pub fn get(self, by: Grouping) -> Option<u16> {
        self.0[by as usize]
    }

    pub fn set(&mut self, by: Grouping, index: u16) {
        self.0[by as usize] = Some(index);
    }

    /// Whether the request has no label at all.
    pub fn is_empty(self) -> bool {
        self.0.iter().all(Option::is_none)
    }
}

/// A label chosen by grouping and name, as an SLA selector writes it (`[model=lora-sql]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LabelRef {
    pub by: Grouping,
    pub name: String,
}

impl fmt::Display for LabelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.by, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(weights: &[u32]) -> Group {
        Group {
            by: Grouping::Model,
            labels: weights
                .iter()
                .enumerate()
                .map(|(i, &w)| Label {
                    name: format!("m{i}"),
                    weight: w,
                    priority: None,
                    dataset: None,
                })
                .collect(),
        }
    }

    #[test]
    fn picks_follow_the_weights() {
        let g = group(&[3, 1]);
        let n = 10_000;
        let firsts = (0..n)
            .filter(|i| g.pick((*i as f64 + 0.5) / n as f64) == 0)
            .count();
        assert_eq!(firsts, 7_500);
        assert_eq!(g.pick(0.0), 0);
        assert_eq!(g.pick(0.999_999), 1);
    }

    #[test]
    fn label_names_are_a_safe_alphabet() {
        assert!(valid_label("meta-llama/Llama-3.1-8B"));
        assert!(valid_label("lora:sql_v2"));
        for bad in ["", "a b", "x]", "a=b", "<b>", "a,b", "é"] {
            assert!(!valid_label(bad), "{bad:?}");
        }
        assert!(!valid_label(&"a".repeat(MAX_LABEL_LEN + 1)));
    }

    #[test]
    fn labels_are_per_grouping() {
        let mut l = Labels::default();
        assert!(l.is_empty());
        l.set(Grouping::Class, 2);
        assert_eq!(l.get(Grouping::Class), Some(2));
        assert_eq!(l.get(Grouping::Model), None);
    }
}
