//! The answers a run keeps (`answers.jsonl`, docs/quality.md "Agreement with a baseline"):
//! one row per judged answer of a data set with a `quality` block, made where the answer is
//! judged (once per whole answer, never per chunk), and `compare`'s pairing of two runs' rows
//! by prompt: identical answers, their similarity, and the paired change of accuracy.
//!
//! A row keys its prompt by the plan (stage, the request's index in it, the turn, the data
//! set item), holds a hash of the whole answer (for "identical") and a bounded, masked copy
//! of its start (for similarity), and the scorer's mark.

use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use infermeter_stats::{Pairs, mcnemar_exact, paired_difference, wilson};

/// The most bytes of an answer's text a row keeps: enough to compare answers' wording, and
/// what bounds the file (and `compare`'s memory) whatever the server sends.
pub const KEPT_ANSWER_BYTES: usize = 4096;

/// Read past the kept bytes before masking, so that a secret cut by the bound is still seen
/// whole and masked (a shape seen only in part would slip through).
const MASK_MARGIN: usize = 512;

/// The longest row `compare` reads: a kept answer escaped as JSON (at most six bytes a
/// byte, `\u00XX`) and the row's keys; a longer line is not a row of ours.
const MAX_ROW_BYTES: u64 = (KEPT_ANSWER_BYTES as u64) * 6 + 4096;

/// One answer, as `answers.jsonl` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerRow {
    pub stage: String,
    /// The request's position in its stage's plan (a session's, for each of its turns).
    pub index: u64,
    #[serde(default)]
    pub turn: u32,
    /// The data set record the prompt came from.
    pub item: u64,
    /// SHA-256 of the whole answer's text (past any reasoning), first 16 bytes in hex.
    pub hash: String,
    /// The whole answer's length in bytes.
    pub bytes: u64,
    /// The scorer's mark; absent when the answer was not scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct: Option<bool>,
    /// The answer's first [`KEPT_ANSWER_BYTES`], secrets masked.
    pub text: String,
    /// The answer was longer than the text kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clipped: bool,
}

impl AnswerRow {
    /// The row of one judged answer: `text` is the whole answer, `correct` the scorer's mark.
    pub fn new(
        stage: &str,
        (index, turn, item): (u64, u32, u64),
        text: &str,
        correct: Option<bool>,
    ) -> AnswerRow {
        let hash = answer_hash(text);
        let window = prefix(text, KEPT_ANSWER_BYTES + MASK_MARGIN);
        let masked = crate::redact::secrets(window);
        let kept = prefix(&masked, KEPT_ANSWER_BYTES);
        AnswerRow {
            stage: crate::redact::secrets(stage).into_owned(),
            index,
            turn,
            item,
            hash,
            bytes: text.len() as u64,
            correct,
            clipped: kept.len() < text.len(),
            text: kept.to_string(),
        }
    }

    fn key(&self) -> (String, u64, u32) {
        (self.stage.clone(), self.index, self.turn)
    }
}

/// SHA-256 of an answer's whole text, its first 16 bytes in hex: what "identical" compares.
pub fn answer_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A baseline run's answers by prompt (stage, index, turn), each its data set record and its
/// hash, for a run's `agreement` (no text is held: a row costs its key and 32 bytes).
#[derive(Debug, Default)]
pub struct AnswerIndex {
    by_key: HashMap<(String, u64, u32), (u64, String)>,
}

impl AnswerIndex {
    /// The rows' index; a key the baseline has twice (rounds of a stage) keeps its first.
    pub fn new(rows: Vec<AnswerRow>) -> AnswerIndex {
        let mut by_key = HashMap::with_capacity(rows.len());
        for row in rows {
            by_key
                .entry((row.stage, row.index, row.turn))
                .or_insert((row.item, row.hash));
        }
        AnswerIndex { by_key }
    }

    /// Whether an answer (its hash) is the baseline's to the same prompt: `None` when the
    /// baseline did not answer it, or answered another record under that key (not the same
    /// prompt).
    pub fn agrees(
        &self,
        stage: &str,
        (index, turn, item): (u64, u32, u64),
        hash: &str,
    ) -> Option<bool> {
        let (base_item, base_hash) = self.by_key.get(&(stage.to_string(), index, turn))?;
        (*base_item == item).then(|| base_hash == hash)
    }
}

/// The longest start of `text` of at most `max` bytes that ends on a character boundary.
fn prefix(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Why a run's answers could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AnswersError {
    #[error("failed to read {}", path.display())]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}: not a row of answers.jsonl", path.display())]
    Row {
        path: std::path::PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}:{line}: a line longer than {MAX_ROW_BYTES} bytes is not a row of answers.jsonl", path.display())]
    TooLong {
        path: std::path::PathBuf,
        line: usize,
    },
}

/// Every row of an `answers.jsonl`, read line by line, each line bounded; `None` when the
/// file does not exist (a run without a `quality` block keeps no answers).
pub fn read_answers(path: &Path) -> Result<Option<Vec<AnswerRow>>, AnswersError> {
    let io = |source| AnswersError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match crate::files::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let mut reader = std::io::BufReader::new(file);
    let mut rows = Vec::new();
    let mut buf = Vec::new();
    for line in 1.. {
        buf.clear();
        let n = (&mut reader)
            .take(MAX_ROW_BYTES + 1)
            .read_until(b'\n', &mut buf)
            .map_err(io)?;
        if n == 0 {
            break;
        }
        if n as u64 > MAX_ROW_BYTES {
            return Err(AnswersError::TooLong {
                path: path.to_path_buf(),
                line,
            });
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let row = serde_json::from_slice(&buf).map_err(|source| AnswersError::Row {
            path: path.to_path_buf(),
            line,
            source,
        })?;
        rows.push(row);
    }
    Ok(Some(rows))
}

/// How one stage's answers agree with the baseline's, prompt by prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageAgreement {
    pub stage: String,
    /// Prompts answered in both runs.
    pub paired: u64,
    /// Of them, answered identically (the whole answer's hash).
    pub identical: u64,
    /// `identical / paired` and its Wilson score interval.
    pub identical_share: f64,
    pub identical_low: f64,
    pub identical_high: f64,
    /// The mean ROUGE-L F1 of the kept texts over the pairs (1 for identical answers).
    pub similarity: f64,
    /// The paired change of accuracy, when both runs scored the same prompts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<PairedAccuracy>,
}

/// The change of accuracy over the prompts both runs scored: McNemar's exact test on the
/// discordant pairs and Newcombe's paired interval of the difference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedAccuracy {
    pub scored: u64,
    pub baseline: f64,
    pub current: f64,
    /// Right in the baseline, wrong now (McNemar's b) …
    pub lost: u64,
    /// … and wrong in the baseline, right now (c).
    pub gained: u64,
    /// current − baseline, as a fraction, and its interval.
    pub change: f64,
    pub low: f64,
    pub high: f64,
    pub p_value: f64,
    /// The tolerance, in accuracy points (a fraction): the baseline's accuracy × the
    /// `accuracy` tolerance, never under 0.001.
    pub tolerance: f64,
    /// `worse`, `same`, `better`, or `undecided`, as compare's other metrics.
    pub verdict: &'static str,
}

/// What `compare` can say of two runs' answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Agreement {
    /// Paired by prompt, stage by stage.
    Paired { stages: Vec<StageAgreement> },
    /// The answers cannot be paired, and why.
    Unpaired { reason: String },
}

/// The pairing's settings: the confidence of its intervals, the `accuracy` tolerance (a
/// fraction of the baseline's accuracy), and the similarity of two kept texts.
pub struct PairingRules<'a> {
    pub confidence: f64,
    pub tolerance: f64,
    pub similarity: &'a dyn Fn(&str, &str) -> f64,
}

/// The two runs' answers paired by prompt (stage, index, turn; the data set item must match
/// too, or the prompts are not the same). A key the baseline has twice (rounds of a stage)
/// pairs its first answer.
pub fn agreement(base: &[AnswerRow], current: &[AnswerRow], rules: &PairingRules<'_>) -> Agreement {
    let mut by_key: HashMap<(String, u64, u32), &AnswerRow> = HashMap::with_capacity(base.len());
    for row in base {
        by_key.entry(row.key()).or_insert(row);
    }
    let mut stages: Vec<(String, Vec<(&AnswerRow, &AnswerRow)>)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for row in current {
        let Some(b) = by_key.get(&row.key()) else {
            continue;
        };
        if b.item != row.item {
            return Agreement::Unpaired {
                reason: format!(
                    "stage `{}` request {} asked data set record {} in the baseline and {} \
                     now: the runs did not send the same prompts",
                    row.stage, row.index, b.item, row.item
                ),
            };
        }
        if !seen.insert(row.key()) {
            continue;
        }
        match stages.iter_mut().find(|(s, _)| *s == row.stage) {
            Some((_, pairs)) => pairs.push((b, row)),
            None => stages.push((row.stage.clone(), vec![(b, row)])),
        }
    }
    if stages.is_empty() {
        return Agreement::Unpaired {
            reason: "no prompt was answered in both runs (stage, request index and turn \
                     must match)"
                .to_string(),
        };
    }
    Agreement::Paired {
        stages: stages
            .into_iter()
            .map(|(stage, pairs)| stage_agreement(stage, &pairs, rules))
            .collect(),
    }
}

fn stage_agreement(
    stage: String,
    pairs: &[(&AnswerRow, &AnswerRow)],
    rules: &PairingRules<'_>,
) -> StageAgreement {
    let n = pairs.len() as u64;
    let identical = pairs.iter().filter(|(b, c)| b.hash == c.hash).count() as u64;
    let similarity = pairs
        .iter()
        .map(|(b, c)| {
            if b.hash == c.hash {
                1.0
            } else {
                (rules.similarity)(&b.text, &c.text)
            }
        })
        .sum::<f64>()
        / n.max(1) as f64;
    let (identical_low, identical_high) = wilson(identical, n, rules.confidence)
        .ok()
        .flatten()
        .unwrap_or((0.0, 1.0));
    StageAgreement {
        stage,
        paired: n,
        identical,
        identical_share: identical as f64 / n.max(1) as f64,
        identical_low,
        identical_high,
        similarity,
        accuracy: paired_accuracy(pairs, rules),
    }
}

fn paired_accuracy(
    pairs: &[(&AnswerRow, &AnswerRow)],
    rules: &PairingRules<'_>,
) -> Option<PairedAccuracy> {
    let mut t = Pairs::default();
    for (b, c) in pairs {
        // Only prompts both runs scored are pairs of marks.
        let (Some(was), Some(now)) = (b.correct, c.correct) else {
            continue;
        };
        match (was, now) {
            (true, true) => t.both += 1,
            (true, false) => t.lost += 1,
            (false, true) => t.gained += 1,
            (false, false) => t.neither += 1,
        }
    }
    let (change, low, high) = paired_difference(&t, rules.confidence).ok().flatten()?;
    let n = t.n() as f64;
    let baseline = (t.both + t.lost) as f64 / n;
    let tolerance = (baseline * rules.tolerance).max(0.001);
    let verdict = if high < -tolerance {
        "worse"
    } else if low > tolerance {
        "better"
    } else if low >= -tolerance && high <= tolerance {
        "same"
    } else {
        "undecided"
    };
    Some(PairedAccuracy {
        scored: t.n(),
        baseline,
        current: (t.both + t.gained) as f64 / n,
        lost: t.lost,
        gained: t.gained,
        change,
        low,
        high,
        p_value: mcnemar_exact(&t),
        tolerance,
        verdict,
    })
}

#[cfg(test)]
#[path = "answers_tests.rs"]
mod tests;
