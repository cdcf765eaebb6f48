//! `quality { judge { url …; model …; rubric … } }`: a second OpenAI-compatible endpoint that
//! scores a sample of a stage's answers 1 to `scale` against a rubric (docs/quality.md, "LLM
//! judge"). What is asked and how the answer is read live here, beside the other scorers;
//! sending and caching are the runner's (`runner/judge.rs`).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The judge's settings, as the scenario wrote them (the rubric file already read).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JudgeSpec {
    /// The judge's API base (`http://…/v1`), or `sim`: the embedded simulator the target runs.
    pub url: String,
    pub model: String,
    /// The environment variable holding the judge's API key (never the key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The rubric's text.
    pub rubric: String,
    /// Scores run from 1 to `scale`.
    pub scale: u32,
    /// Judge calls in flight at once.
    pub concurrency: u32,
    /// Each judge call's deadline, in milliseconds.
    pub timeout_ms: u64,
    /// The record's reference is shown to the judge.
    pub with_reference: bool,
    /// Answers judged at most, per stage round.
    pub sample: u32,
    /// The cache file, as written (relative to the scenario's folder).
    pub cache: String,
    /// What the judge's tokens cost (`price input="0.15/1M" output="0.60/1M"`), when written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<JudgePrice>,
    /// `cache` resolved against the scenario's folder; not part of the plan's text.
    #[serde(skip)]
    #[schemars(skip)]
    pub cache_path: Option<PathBuf>,
}

/// The judge's prices (`price input="0.15/1M" output="0.60/1M" currency="USD"`), each per
/// million tokens whatever unit it was written in (`/1M` or `/1K`): non-negative finite
/// numbers. The currency is the user's word, shown beside the cost, never converted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JudgePrice {
    /// Per million prompt (input) tokens.
    pub input_per_million: f64,
    /// Per million completion (output) tokens.
    pub output_per_million: f64,
    /// The unit the cost is shown in, as written (`currency="USD"`); absent: a plain number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
}

/// The smallest `sample`: fewer judged answers than `judge_score`'s interval needs could
/// never decide it (the metrics' `JUDGE_MIN_SCORED`, held equal by a runner test).
pub const MIN_JUDGE_SAMPLE: u64 = 10;

/// The default cache, beside the scenario.
pub const DEFAULT_JUDGE_CACHE: &str = ".infermeter/judge-cache.jsonl";

/// Bytes of an answer (and of a prompt) shown to the judge: the rest is cut, so a 10 MB
/// answer costs the judge what 64 KiB does.
pub const MAX_JUDGED_BYTES: usize = 64 * 1024;

/// The first `MAX_JUDGED_BYTES` of `text`, cut at a character boundary.
pub fn clip_judged(text: &str) -> &str {
    if text.len() <= MAX_JUDGED_BYTES {
        return text;
    }
    let mut end = MAX_JUDGED_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The judge's verdict read from its answer: `Score: K` (the last such line, case-insensitive,
/// `K` optionally followed by `/N`), else the whole answer a bare integer; `K` must be in
/// `1..=scale`. Anything else is no score (a judge failure, never the answer's).
pub fn parse_score(text: &str, scale: u32) -> Option<u32> {
    let in_range = |k: u32| (1..=scale).contains(&k).then_some(k);
    let trimmed = text.trim();
    if let Ok(k) = trimmed.parse::<u32>() {
        return in_range(k);
    }
    let line = trimmed
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.len() >= 6 && l[..6].eq_ignore_ascii_case("score:"))?;
    let rest = line[6..].trim().trim_end_matches('.');
    let digits = rest.split('/').next()?.trim();
    in_range(digits.parse().ok()?)
}

/// The cache key of one judgement: SHA-256 over the judge model, the rubric, the scale, the
/// prompt, the answer and the reference shown, each length-prefixed so that no two different
/// tuples meet. Hex.
pub fn cache_key(spec: &JudgeSpec, prompt: &str, answer: &str, reference: Option<&str>) -> String {
    let mut h = Sha256::new();
    let scale = spec.scale.to_string();
    let parts = [
        spec.model.as_str(),
        spec.rubric.as_str(),
        scale.as_str(),
        prompt,
        answer,
        reference.unwrap_or("\u{0}none"),
    ];
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The chat request asking the judge for a score: the rubric and the format in the system
/// message (which starts with [`crate::protocol::JUDGE_MARKER`], so the embedded simulator
/// knows a judge request), the question, the reference when shown, and the answer.
pub fn judge_body(
    spec: &JudgeSpec,
    prompt: &str,
    answer: &str,
    reference: Option<&str>,
) -> serde_json::Value {
    let system = format!(
        "{marker}\nYou grade one answer to one question against this rubric:\n{rubric}\n\n\
         Reply with one line `Score: K`, K an integer from 1 (worst) to {scale} (best), and \
         nothing else.",
        marker = crate::protocol::JUDGE_MARKER,
        rubric = spec.rubric,
        scale = spec.scale,
    );
    let mut user = format!("[Question]\n{}\n", clip_judged(prompt));
    if let Some(r) = reference {
        user.push_str(&format!("\n[Reference]\n{}\n", clip_judged(r)));
    }
    user.push_str(&format!(
        "\n[Answer]\n{}\n[End of answer]",
        clip_judged(answer)
    ));
    serde_json::json!({
        "model": spec.model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ],
        "temperature": 0,
        "max_tokens": 16,
        "stream": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> JudgeSpec {
        JudgeSpec {
            url: "sim".into(),
            model: "judge".into(),
            api_key_env: None,
            rubric: "Correct and concise.".into(),
            scale: 5,
            concurrency: 4,
            timeout_ms: 30_000,
            with_reference: true,
            sample: 200,
            cache: DEFAULT_JUDGE_CACHE.into(),
            cache_path: None,
            price: None,
        }
    }

    #[test]
    fn judge_score_format_is_strict() {
        assert_eq!(parse_score("Score: 4", 5), Some(4));
        assert_eq!(parse_score(" score: 5/5.", 5), Some(5));
        assert_eq!(parse_score("The answer is fine.\nScore: 2", 5), Some(2));
        assert_eq!(parse_score("3", 5), Some(3));
        assert_eq!(parse_score(" 1 \n", 10), Some(1));
        for garbage in [
            "",
            "Score: 0",
            "Score: 6",
            "6",
            "Score: four",
            "great answer",
            "Score:",
            "4 stars",
            "-1",
            "Score: 3.5",
            "Scores: 3",
        ] {
            assert_eq!(parse_score(garbage, 5), None, "{garbage:?}");
        }
    }

    #[test]
    fn judge_cache_key_covers_every_part() {
        let s = spec();
        let k = cache_key(&s, "q", "a", Some("r"));
        assert_eq!(k.len(), 64);
        assert_eq!(k, cache_key(&s, "q", "a", Some("r")));
        assert_ne!(k, cache_key(&s, "q", "a", None));
        assert_ne!(k, cache_key(&s, "qa", "", Some("r")));
        assert_ne!(k, cache_key(&s, "q", "b", Some("r")));
        let mut other = s.clone();
        other.model = "judge-2".into();
        assert_ne!(k, cache_key(&other, "q", "a", Some("r")));
        other = s.clone();
        other.rubric.push('!');
        assert_ne!(k, cache_key(&other, "q", "a", Some("r")));
        other = s;
        other.scale = 10;
        assert_ne!(k, cache_key(&other, "q", "a", Some("r")));
    }

    #[test]
    fn judge_sees_at_most_64_kib_of_an_answer() {
        let long = "é".repeat(MAX_JUDGED_BYTES);
        let clipped = clip_judged(&long);
        assert!(clipped.len() <= MAX_JUDGED_BYTES && clipped.len() > MAX_JUDGED_BYTES - 4);
        let body = judge_body(&spec(), "q", &long, Some("r"));
        let user = body["messages"][1]["content"].as_str().unwrap_or_default();
        assert!(user.len() < MAX_JUDGED_BYTES + 200);
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        assert!(system.starts_with(crate::protocol::JUDGE_MARKER));
    }
}
