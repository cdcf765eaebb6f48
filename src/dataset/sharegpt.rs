//! ShareGPT loading with vLLM's sampling rules: the first turn is the prompt, the second
//! turn's token count the output length; conversations with too few turns, too short or too
//! long prompts or outputs are skipped. The file (a JSON array or JSONL) is streamed: only the
//! first two turns of a conversation are decoded, and only the conversations that could still
//! be among the `count` sampled are tokenized and kept, so memory is bounded by `count`.

use std::collections::{BTreeMap, BinaryHeap};
use std::fmt;
use std::io::BufRead;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};

use super::source::{HashingReader, file_error, io_error, sample_key};
use super::{DatasetError, Tokenizer};
use crate::plan::{DataItem, ItemPrompt, LoadReport};
use crate::scenario::ShareGptFilters;

/// What a ShareGPT file gave: the sampled items (in sampled order) and the load report.
pub struct Loaded {
    pub items: Vec<DataItem>,
    pub report: LoadReport,
}

/// Loads and samples `count` conversations of a ShareGPT file.
pub fn load_sharegpt(
    path: &Path,
    shown_path: &str,
    count: u64,
    filters: &ShareGptFilters,
    output_override: Option<u32>,
    seed: u64,
    tokenizer: &Tokenizer,
) -> Result<Loaded, DatasetError> {
    let mut sampler = Sampler {
        count: count as usize,
        filters: *filters,
        output_override,
        seed,
        tokenizer,
        records: 0,
        too_few_turns: 0,
        kept: BinaryHeap::new(),
        skipped: Vec::new(),
        error: None,
    };
    let mut reader = HashingReader::open(path)?;
    match reader.peek_non_ws().map_err(|e| io_error(path, e))? {
        Some(b'[') => {
            let mut de = serde_json::Deserializer::from_reader(&mut reader);
            let res = de.deserialize_seq(ConvSeq(&mut sampler));
            if let Some(e) = sampler.error.take() {
                return Err(e);
            }
            res.map_err(|e| json_error(path, &e))?;
            de.end().map_err(|e| json_error(path, &e))?;
        }
        Some(_) => {
            let mut line = String::new();
            let mut number = 0u64;
            loop {
                line.clear();
                number += 1;
                if reader.read_line(&mut line).map_err(|e| io_error(path, e))? == 0 {
                    break;
                }
                if line.trim().is_empty() {
                    continue;
                }
                let conv: Conv = serde_json::from_str(&line)
                    .map_err(|e| file_error(path, Some(number), e.to_string()))?;
                sampler.offer(conv)?;
            }
        }
        None => return Err(file_error(path, None, "the file is empty")),
    }
    let sha256 = reader.finish().map_err(|e| io_error(path, e))?;
    Ok(sampler.finish(shown_path, sha256))
}

fn json_error(path: &Path, e: &serde_json::Error) -> DatasetError {
    file_error(
        path,
        Some(e.line() as u64),
        format!(
            "{e} (a ShareGPT file is a list of {{\"conversations\": [{{\"from\", \"value\"}}, …]}})"
        ),
    )
}

/// One conversation, as much of it as sampling needs.
#[derive(Deserialize)]
struct Conv {
    #[serde(default)]
    conversations: FirstTurns,
}

#[derive(Default)]
struct FirstTurns {
    turns: u64,
    first: String,
    second: String,
}

#[derive(Deserialize)]
struct Turn {
    #[serde(default)]
    value: String,
}

impl<'de> Deserialize<'de> for FirstTurns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FirstTurns;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of turns")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FirstTurns, A::Error> {
                let mut t = FirstTurns::default();
                while t.turns < 2 {
                    match seq.next_element::<Turn>()? {
                        Some(turn) if t.turns == 0 => t.first = turn.value,
                        Some(turn) => t.second = turn.value,
                        None => return Ok(t),
                    }
                    t.turns += 1;
                }
                // Later turns are skipped without being decoded into strings.
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    t.turns += 1;
                }
                Ok(t)
            }
        }
        d.deserialize_seq(V)
    }
}

struct ConvSeq<'a, 't>(&'a mut Sampler<'t>);

impl<'de> Visitor<'de> for ConvSeq<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of conversations")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(conv) = seq.next_element::<Conv>()? {
            if let Err(e) = self.0.offer(conv) {
                self.0.error = Some(e);
                return Err(de::Error::custom("tokenizer failure"));
            }
        }
        Ok(())
    }
}

struct Sampler<'t> {
    count: usize,
    filters: ShareGptFilters,
    output_override: Option<u32>,
    seed: u64,
    tokenizer: &'t Tokenizer,
    records: u64,
    too_few_turns: u64,
    /// Max-heap on the key: the kept item with the largest key leaves first.
    kept: BinaryHeap<Kept>,
    /// `(key, rule)` of tokenized conversations a rule rejected.
    skipped: Vec<(u64, &'static str)>,
    error: Option<DatasetError>,
}

struct Kept(u64, DataItem);

impl PartialEq for Kept {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl Eq for Kept {}
impl PartialOrd for Kept {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Kept {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.cmp(&o.0)
    }
}

impl Sampler<'_> {
    fn threshold(&self) -> u64 {
        if self.kept.len() < self.count {
            u64::MAX
        } else {
            self.kept.peek().map_or(u64::MAX, |k| k.0)
        }
    }

    fn offer(&mut self, conv: Conv) -> Result<(), DatasetError> {
        let ordinal = self.records;
        self.records += 1;
        let c = conv.conversations;
        if c.turns < u64::from(self.filters.min_turns) {
            self.too_few_turns += 1;
            return Ok(());
        }
        let key = sample_key(self.seed, ordinal);
        // Past the threshold this conversation would never be reached in sampled order.
        if key >= self.threshold() {
            return Ok(());
        }
        let f = &self.filters;
        let prompt = self.tokenizer.try_count(&c.first)? as u64;
        let output = match self.output_override {
            Some(o) => u64::from(o),
            None => self.tokenizer.try_count(&c.second)? as u64,
        };
        let rule = if prompt < u64::from(f.min_prompt_tokens) {
            Some("prompt_under")
        } else if self.output_override.is_none() && output < u64::from(f.min_output_tokens) {
            Some("output_under")
        } else if prompt > u64::from(f.max_prompt_tokens) {
            Some("prompt_over")
        } else if prompt + output > u64::from(f.max_total_tokens) {
            Some("total_over")
        } else {
            None
        };
        if let Some(rule) = rule {
            self.skipped.push((key, rule));
            return Ok(());
        }
        self.kept.push(Kept(
            key,
            DataItem {
                prompt: ItemPrompt::Text(c.first),
                input_tokens: prompt as u32,
                output_tokens: output as u32,
                extra: BTreeMap::new(),
            },
        ));
        if self.kept.len() > self.count {
            self.kept.pop();
        }
        Ok(())
    }

    fn finish(self, shown_path: &str, sha256: String) -> Loaded {
        let threshold = self.threshold();
        let f = self.filters;
        let mut skipped = BTreeMap::new();
        if self.too_few_turns > 0 {
            skipped.insert(
                format!("fewer_than_{}_turns", f.min_turns),
                self.too_few_turns,
            );
        }
        // Only rejections met before the sample was full count, as in vLLM's loop.
        for (key, rule) in &self.skipped {
            if *key >= threshold {
                continue;
            }
            let name = match *rule {
                "prompt_under" => format!("prompt_under_{}_tokens", f.min_prompt_tokens),
                "output_under" => format!("output_under_{}_tokens", f.min_output_tokens),
                "prompt_over" => format!("prompt_over_{}_tokens", f.max_prompt_tokens),
                _ => format!("total_over_{}_tokens", f.max_total_tokens),
            };
            *skipped.entry(name).or_insert(0) += 1;
        }
        let items = self
            .kept
            .into_sorted_vec()
            .into_iter()
            .map(|k| k.1)
            .collect();
        Loaded {
            items,
            report: LoadReport {
                path: shown_path.to_string(),
                sha256,
                records: self.records,
                skipped,
            },
        }
    }
}
