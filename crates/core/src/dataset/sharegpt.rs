//! ShareGPT loading with vLLM's sampling rules: the first turn is the prompt, the second
//! turn's token count the output length; conversations with too few turns, too short or too
//! long prompts or outputs are skipped. The file (a JSON array or JSONL) is streamed: only the
//! first two turns of a conversation are decoded, and only the conversations that could still
//! be among the `count` sampled are tokenized and kept, so memory is bounded by `count`.
//!
//! With sessions (`max_turns`), up to that many human/gpt pairs are decoded and a kept item is
//! the whole conversation; the vLLM rules still apply to its first turn only.

use std::collections::{BTreeMap, BinaryHeap};
use std::fmt;
use std::path::Path;
use std::rc::Rc;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::source::{HashingReader, RecordBound, Records, file_error, io_error, sample_key};
use super::{DataItem, ItemPrompt, LoadReport, ShareGptFilters, TurnTokens};
use super::{DatasetError, Tokenizer};

/// What a ShareGPT file gave: the sampled items (in sampled order) and the load report.
pub struct Loaded {
    pub items: Vec<DataItem>,
    pub report: LoadReport,
}

/// Loads and samples `count` conversations of a ShareGPT file; with `max_turns`, whole
/// conversations (sessions) of up to that many turns.
// Each argument is one independent knob of the scenario's `sharegpt` node.
#[allow(clippy::too_many_arguments)]
pub fn load_sharegpt(
    path: &Path,
    shown_path: &str,
    count: u64,
    filters: &ShareGptFilters,
    output_override: Option<u32>,
    max_turns: Option<u32>,
    seed: u64,
    tokenizer: &Tokenizer,
) -> Result<Loaded, DatasetError> {
    let keep = max_turns.map_or(2, |t| (t as usize).saturating_mul(2).max(2));
    let mut sampler = Sampler {
        sessions: max_turns.is_some(),
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
            let bound = reader.bound_records();
            let mut de = serde_json::Deserializer::from_reader(&mut reader);
            let res = de.deserialize_seq(ConvSeq(&mut sampler, keep, bound));
            if let Some(e) = sampler.error.take() {
                return Err(e);
            }
            res.map_err(|e| json_error(path, &e))?;
            de.end().map_err(|e| json_error(path, &e))?;
        }
        Some(_) => {
            let mut lines = Records::new(&mut reader, path);
            while let Some((number, line)) = lines.next_record()? {
                let mut de = serde_json::Deserializer::from_str(line);
                let conv = ConvSeed(keep)
                    .deserialize(&mut de)
                    .and_then(|c| de.end().map(|()| c))
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

/// One conversation, as much of it as sampling needs: its turn count and the first `keep`
/// turns' `(from, value)`.
#[derive(Default)]
struct Conv {
    turns: u64,
    kept: Vec<(String, String)>,
}

#[derive(Deserialize)]
struct Turn {
    #[serde(default)]
    from: String,
    #[serde(default)]
    value: String,
}

/// Decodes a conversation object, keeping its first `.0` turns.
struct ConvSeed(usize);

impl<'de> DeserializeSeed<'de> for ConvSeed {
    type Value = Conv;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Conv, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ConvSeed {
    type Value = Conv;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a conversation object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Conv, A::Error> {
        let mut conv = Conv::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "conversations" {
                conv = map.next_value_seed(TurnsSeed(self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(conv)
    }
}

struct TurnsSeed(usize);

impl<'de> DeserializeSeed<'de> for TurnsSeed {
    type Value = Conv;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Conv, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for TurnsSeed {
    type Value = Conv;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of turns")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Conv, A::Error> {
        let mut c = Conv::default();
        while c.kept.len() < self.0 {
            match seq.next_element::<Turn>()? {
                Some(turn) => c.kept.push((turn.from, turn.value)),
                None => break,
            }
        }
        c.turns = c.kept.len() as u64;
        // Later turns are skipped without being decoded into strings.
        while seq.next_element::<IgnoredAny>()?.is_some() {
            c.turns += 1;
        }
        Ok(c)
    }
}

/// The conversations of a JSON array; each starts a new record of the reader's bound.
struct ConvSeq<'a, 't>(&'a mut Sampler<'t>, usize, Rc<RecordBound>);

impl<'de> Visitor<'de> for ConvSeq<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of conversations")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            self.2.start_record();
            let Some(conv) = seq.next_element_seed(ConvSeed(self.1))? else {
                break;
            };
            if let Err(e) = self.0.offer(conv) {
                self.0.error = Some(e);
                return Err(de::Error::custom("tokenizer failure"));
            }
        }
        Ok(())
    }
}

struct Sampler<'t> {
    /// Keep whole conversations (multi-turn sessions).
    sessions: bool,
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
        let c = conv;
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
        let empty = String::new();
        let first = c.kept.first().map_or(&empty, |t| &t.1);
        let second = c.kept.get(1).map_or(&empty, |t| &t.1);
        let prompt = self.tokenizer.try_count(first)? as u64;
        let reply = self.tokenizer.try_count(second)? as u64;
        let output = self.output_override.map_or(reply, u64::from);
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
        let item = if self.sessions {
            let first = TurnTokens {
                user_tokens: prompt as u32,
                output_tokens: output as u32,
                reply_tokens: reply as u32,
            };
            super::session::conversation(c.kept, first, self.output_override, self.tokenizer)?
        } else {
            let mut kept = c.kept;
            kept.truncate(1);
            DataItem {
                prompt: ItemPrompt::Text(kept.pop().map(|t| t.1).unwrap_or_default()),
                input_tokens: prompt as u32,
                output_tokens: output as u32,
                extra: BTreeMap::new(),
                images: Vec::new(),
                turns: Vec::new(),
                agent: None,
                reference: None,
            }
        };
        self.kept.push(Kept(key, item));
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
