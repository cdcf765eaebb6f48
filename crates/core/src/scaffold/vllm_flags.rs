//! The command line of `vllm bench serve` as words → flags with their values: which flags
//! exist and how each takes its value (vLLM's argparse definitions), which have no
//! counterpart in a scenario and what to do instead, and notes for words it does not know.
//! Underscores in flag names are read as dashes, as vLLM's parser does.

use super::ScaffoldError;

/// How a flag takes its value.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Takes {
    One,
    Switch,
    /// `nargs="*"` / `"+"`: every following word up to the next flag.
    Many,
}

/// The flags of `vllm bench serve` this import knows, mapped or not.
const FLAGS: &[(&str, Takes)] = &[
    ("--backend", Takes::One),
    ("--base-url", Takes::One),
    ("--host", Takes::One),
    ("--port", Takes::One),
    ("--endpoint", Takes::One),
    ("--endpoint-type", Takes::One),
    ("--model", Takes::One),
    ("--served-model-name", Takes::One),
    ("--request-rate", Takes::One),
    ("--burstiness", Takes::One),
    ("--max-concurrency", Takes::One),
    ("--num-prompts", Takes::One),
    ("--dataset-name", Takes::One),
    ("--dataset-path", Takes::One),
    ("--random-input-len", Takes::One),
    ("--random-output-len", Takes::One),
    ("--random-range-ratio", Takes::One),
    ("--random-prefix-len", Takes::One),
    ("--sharegpt-output-len", Takes::One),
    ("--custom-output-len", Takes::One),
    ("--seed", Takes::One),
    ("--ignore-eos", Takes::Switch),
    ("--num-warmups", Takes::One),
    ("--goodput", Takes::Many),
    ("--header", Takes::Many),
    ("--temperature", Takes::One),
    ("--top-p", Takes::One),
    ("--top-k", Takes::One),
    ("--min-p", Takes::One),
    ("--frequency-penalty", Takes::One),
    ("--presence-penalty", Takes::One),
    ("--repetition-penalty", Takes::One),
    ("--extra-body", Takes::One),
    // Known, without a counterpart (`UNMAPPED`).
    ("--label", Takes::One),
    ("--tokenizer", Takes::One),
    ("--tokenizer-mode", Takes::One),
    ("--trust-remote-code", Takes::Switch),
    ("--disable-tqdm", Takes::Switch),
    ("--profile", Takes::Switch),
    ("--save-result", Takes::Switch),
    ("--save-detailed", Takes::Switch),
    ("--append-result", Takes::Switch),
    ("--metadata", Takes::Many),
    ("--result-dir", Takes::One),
    ("--result-filename", Takes::One),
    ("--percentile-metrics", Takes::One),
    ("--metric-percentiles", Takes::One),
    ("--request-id-prefix", Takes::One),
    ("--use-beam-search", Takes::Switch),
    ("--logprobs", Takes::One),
    ("--lora-modules", Takes::Many),
    ("--ramp-up-strategy", Takes::One),
    ("--ramp-up-start-rps", Takes::One),
    ("--ramp-up-end-rps", Takes::One),
    ("--ready-check-timeout-sec", Takes::One),
    ("--disable-shuffle", Takes::Switch),
    ("--no-stream", Takes::Switch),
];

/// Known flags that have no counterpart in a scenario (noted with [`no_counterpart`]).
pub(super) const UNMAPPED: &[&str] = &[
    "--label",
    "--tokenizer",
    "--tokenizer-mode",
    "--trust-remote-code",
    "--disable-tqdm",
    "--profile",
    "--save-result",
    "--save-detailed",
    "--append-result",
    "--metadata",
    "--result-dir",
    "--result-filename",
    "--percentile-metrics",
    "--metric-percentiles",
    "--request-id-prefix",
    "--use-beam-search",
    "--logprobs",
    "--lora-modules",
    "--ramp-up-strategy",
    "--ramp-up-start-rps",
    "--ramp-up-end-rps",
    "--ready-check-timeout-sec",
    "--disable-shuffle",
    "--no-stream",
];

/// What to tell the user about a known flag infermeter does not carry over.
pub(super) fn no_counterpart(flag: &str) -> &'static str {
    match flag {
        "--tokenizer" | "--tokenizer-mode" | "--trust-remote-code" => {
            "lengths are counted with cl100k_base; add `tokenizer \"path/to/tokenizer.json\"` for the model's own counts"
        }
        "--save-result" | "--save-detailed" | "--append-result" | "--result-dir"
        | "--result-filename" | "--label" | "--metadata" => {
            "results.json and report.md go to `infermeter run --out DIR`"
        }
        "--percentile-metrics" | "--metric-percentiles" => {
            "every latency metric is reported at p50, p90, p95, p99, p99.9, max and mean"
        }
        "--ready-check-timeout-sec" => "run `infermeter wait URL --timeout 10m` before the gate",
        "--ramp-up-strategy" | "--ramp-up-start-rps" | "--ramp-up-end-rps" => {
            "write `arrival \"ramp\" from=… to=… over=…` (docs/profiles.md)"
        }
        "--disable-tqdm" => "progress is plain lines in CI anyway (`--quiet` silences it)",
        "--no-stream" => "infermeter always streams (TTFT and ITL need it)",
        _ => "no counterpart",
    }
}

pub(super) struct Args {
    /// (flag, values) in order, flags normalised.
    pub(super) given: Vec<(String, Vec<String>)>,
    pub(super) notes: Vec<String>,
}

impl Args {
    pub(super) fn last(&self, flag: &str) -> Option<&str> {
        self.given
            .iter()
            .rev()
            .find(|(f, _)| f == flag)
            .and_then(|(_, v)| v.first())
            .map(String::as_str)
    }
    pub(super) fn has(&self, flag: &str) -> bool {
        self.given.iter().any(|(f, _)| f == flag)
    }
    pub(super) fn all(&self, flag: &str) -> Vec<&str> {
        self.given
            .iter()
            .filter(|(f, _)| f == flag)
            .flat_map(|(_, v)| v.iter().map(String::as_str))
            .collect()
    }
}

/// Splits the words into flags; leading words that are not flags (`vllm bench serve`,
/// `python benchmarks/benchmark_serving.py`) are skipped.
pub(super) fn split(words: &[String]) -> Result<Args, ScaffoldError> {
    let mut given = Vec::new();
    let mut notes = Vec::new();
    let mut i = words
        .iter()
        .position(|w| w.starts_with("--"))
        .unwrap_or(words.len());
    while i < words.len() {
        let word = &words[i];
        i += 1;
        let (raw, inline) = match word.split_once('=') {
            Some((f, v)) => (f, Some(v.to_string())),
            None => (word.as_str(), None),
        };
        if !raw.starts_with("--") {
            notes.push(format!("ignored stray argument `{word}`"));
            continue;
        }
        let flag = format!("--{}", raw[2..].replace('_', "-"));
        let takes = FLAGS.iter().find(|(f, _)| *f == flag).map(|(_, t)| *t);
        let values = match (takes, inline) {
            (Some(Takes::Switch), _) => Vec::new(),
            (_, Some(v)) => vec![v],
            (Some(Takes::Many), None) => {
                let start = i;
                while i < words.len() && !words[i].starts_with("--") {
                    i += 1;
                }
                words[start..i].to_vec()
            }
            // An unknown flag takes the next word when it is not a flag itself.
            (Some(Takes::One) | None, None) => match words.get(i) {
                Some(v) if !v.starts_with("--") || v.parse::<f64>().is_ok() => {
                    i += 1;
                    vec![v.clone()]
                }
                _ if takes.is_some() => {
                    return Err(ScaffoldError::MissingValue { flag });
                }
                _ => Vec::new(),
            },
        };
        if takes.is_none() {
            let shown = match values.first() {
                Some(v) => format!("{flag} {v}"),
                None => flag.clone(),
            };
            let hint = crate::scenario::did_you_mean(&flag, FLAGS.iter().map(|(f, _)| *f))
                .map(|s| format!(" (did you mean {s}?)"))
                .unwrap_or_default();
            notes.push(format!(
                "unknown flag `{shown}`{hint}: not a `vllm bench serve` flag this import knows; ignored"
            ));
        }
        given.push((flag, values));
    }
    Ok(Args { given, notes })
}

/// The last value of `flag` as a `T` that `ok` accepts, or `None` when the flag is absent.
/// A value that does not parse, or that `ok` refuses (not finite, out of range), is an error
/// whose hint, `expected`, says what the flag takes: `--request-rate nan` must not become a
/// scenario. Surrounding blanks are allowed, as Python's `float()` and `int()` allow them.
pub(super) fn number<T: std::str::FromStr>(
    args: &Args,
    flag: &'static str,
    expected: &'static str,
    ok: impl Fn(&T) -> bool,
) -> Result<Option<T>, ScaffoldError> {
    let Some(v) = args.last(flag) else {
        return Ok(None);
    };
    match v.trim().parse::<T>() {
        Ok(n) if ok(&n) => Ok(Some(n)),
        _ => Err(ScaffoldError::Value {
            flag,
            value: v.to_string(),
            reason: format!("expected {expected}"),
        }),
    }
}

/// Any value of the type: a count that may be 0, a seed.
pub(super) fn any<T>(_: &T) -> bool {
    true
}

/// At least 1: a count of requests, clients or tokens.
pub(super) fn positive(n: &u32) -> bool {
    *n >= 1
}
