//! `vllm bench serve` (and `benchmarks/benchmark_serving.py`) arguments → a [`Draft`] with
//! vLLM's defaults: `--request-rate inf`, `--num-prompts 1000`, `--dataset-name random` with
//! 1024 input and 128 output tokens, `--seed 0`, `--endpoint /v1/completions`, greedy
//! sampling (`temperature 0.0`) and, for random prompts, `ignore_eos`.
//!
//! Every flag is accounted for: mapped, noted as having no counterpart (with what to do
//! instead), or noted as unknown; the notes head the written file and are returned to the
//! caller. Underscores in flag names are read as dashes, as vLLM's parser does.

use super::vllm_flags::{UNMAPPED, no_counterpart, number, split};
use super::{Data, Draft, Length, Limit, Load, ScaffoldError, Scalar};
use crate::hub::HfFile;
use crate::protocol::{Api, REGISTRY};
use crate::units::{Burstiness, Duration};

/// vLLM's `--random-range-ratio r`: lengths uniform in `[len·(1−r), len·(1+r)]`.
fn ranged(len: u32, ratio: f64) -> Length {
    if ratio <= 0.0 {
        return Length::Fixed(len.max(1));
    }
    let lo = (f64::from(len) * (1.0 - ratio)).floor().max(1.0) as u32;
    let hi = (f64::from(len) * (1.0 + ratio)).ceil().max(1.0) as u32;
    Length::Uniform(lo, hi.max(lo))
}

/// The draft a `vllm bench serve` command line describes. `words` are its arguments (with or
/// without the leading `vllm bench serve`).
pub fn import(words: &[String]) -> Result<Draft, ScaffoldError> {
    let args = split(words)?;
    let mut notes = Vec::new();
    let mut d = Draft {
        warmup: 0,
        ..Draft::default()
    };

    // Where: --base-url (the server's root) or http://HOST:PORT, plus --endpoint.
    let base = match args.last("--base-url") {
        Some(b) => b.trim_end_matches('/').to_string(),
        None => {
            let host = args.last("--host").unwrap_or("127.0.0.1");
            let host = if host.contains(':') && !host.starts_with('[') {
                format!("[{host}]")
            } else {
                host.to_string()
            };
            let port: u16 = number(&args, "--port")?.unwrap_or(8000);
            format!("http://{host}:{port}")
        }
    };
    let endpoint = args.last("--endpoint").unwrap_or("/v1/completions");
    let Some((prefix, api)) = Api::from_endpoint(endpoint) else {
        return Err(ScaffoldError::Unsupported {
            flag: "--endpoint",
            value: endpoint.to_string(),
            supported: supported_endpoints(),
        });
    };
    d.url = Some(format!("{base}{prefix}"));
    d.api = api;
    if let Some(b) = args
        .last("--backend")
        .or_else(|| args.last("--endpoint-type"))
    {
        let known = [
            "vllm",
            "openai",
            "openai-chat",
            "vllm-chat",
            "sglang",
            "lmdeploy",
            "llama.cpp",
            "scalellm",
        ];
        if !known.contains(&b) {
            notes.push(format!(
                "--backend {b}: requests go to {endpoint} as an OpenAI-compatible {} API",
                api.as_str()
            ));
        }
    }
    d.model = args
        .last("--served-model-name")
        .or_else(|| args.last("--model"))
        .map(String::from);

    // How many, and how they arrive.
    let num_prompts: u64 = number(&args, "--num-prompts")?.unwrap_or(1000);
    if num_prompts == 0 {
        return Err(ScaffoldError::Value {
            flag: "--num-prompts",
            value: "0".into(),
            reason: "send at least one request".into(),
        });
    }
    d.limit = Limit::Requests(num_prompts);
    let rate = match args.last("--request-rate") {
        None => f64::INFINITY,
        Some(r) => r.parse::<f64>().map_err(|_| ScaffoldError::Value {
            flag: "--request-rate",
            value: r.to_string(),
            reason: "not a number (or inf)".into(),
        })?,
    };
    let burstiness = match number::<f64>(&args, "--burstiness")? {
        None => Burstiness::POISSON,
        Some(b) => Burstiness::new(b).map_err(|e| ScaffoldError::Value {
            flag: "--burstiness",
            value: b.to_string(),
            reason: e.0,
        })?,
    };
    let max_concurrency: Option<u32> = number(&args, "--max-concurrency")?;
    d.load = match (rate.is_finite(), max_concurrency) {
        (true, cap) => {
            if rate <= 0.0 {
                return Err(ScaffoldError::Value {
                    flag: "--request-rate",
                    value: rate.to_string(),
                    reason: "must be > 0".into(),
                });
            }
            if let Some(n) = cap {
                notes.push(format!(
                    "--max-concurrency {n} is not carried over: an open-loop stage never caps the requests in flight, since a cap \
                     would turn queueing at the server into waiting in the client, which the latencies would then hide; \
                     give --max-concurrency without --request-rate for a closed loop"
                ));
            }
            Load::Rate { rate, burstiness }
        }
        (false, Some(n)) if n >= 1 => Load::Concurrency(n),
        (false, _) => {
            let n = u32::try_from(num_prompts).unwrap_or(u32::MAX);
            notes.push(format!(
                "--request-rate inf sends every request at once: written as {n} concurrent clients, one request each"
            ));
            Load::Concurrency(n)
        }
    };
    if args.has("--burstiness") && !rate.is_finite() {
        notes.push("--burstiness applies only to a finite --request-rate; ignored".into());
    }

    // What is sent.
    let dataset = args.last("--dataset-name").unwrap_or("random");
    match dataset {
        "random" => {
            let input: u32 = number(&args, "--random-input-len")?.unwrap_or(1024);
            let output: u32 = number(&args, "--random-output-len")?.unwrap_or(128);
            let ratio: f64 = number(&args, "--random-range-ratio")?.unwrap_or(0.0);
            if !(0.0..1.0).contains(&ratio) {
                return Err(ScaffoldError::Value {
                    flag: "--random-range-ratio",
                    value: ratio.to_string(),
                    reason: "must be in [0, 1)".into(),
                });
            }
            d.data = Data::Synthetic {
                input: ranged(input, ratio),
                output: ranged(output, ratio),
            };
            let prefix: u32 = number(&args, "--random-prefix-len")?.unwrap_or(0);
            d.prefix_tokens = (prefix > 0).then_some(prefix);
            // vLLM forces ignore_eos for random prompts, so outputs have the asked length.
            d.ignore_eos = Some(true);
        }
        "sharegpt" => {
            let path = match args.last("--dataset-path") {
                Some(p) => p.to_string(),
                None => {
                    notes.push(
                        "no --dataset-path: the Hub's ShareGPT file is named; fetch it with `infermeter dataset fetch sharegpt`"
                            .into(),
                    );
                    HfFile::sharegpt().uri()
                }
            };
            d.data = Data::ShareGpt {
                path,
                output_tokens: number(&args, "--sharegpt-output-len")?,
            };
            d.ignore_eos = Some(args.has("--ignore-eos"));
        }
        "custom" => {
            let path = args
                .last("--dataset-path")
                .ok_or(ScaffoldError::MissingValue {
                    flag: "--dataset-path (for --dataset-name custom)".into(),
                })?;
            d.data = Data::Jsonl {
                path: path.to_string(),
                max_tokens: number(&args, "--custom-output-len")?,
            };
            d.ignore_eos = Some(args.has("--ignore-eos"));
        }
        other => {
            return Err(ScaffoldError::Unsupported {
                flag: "--dataset-name",
                value: other.to_string(),
                supported: "random, sharegpt, custom (JSONL prompts)",
            });
        }
    }
    if args.has("--ignore-eos") {
        d.ignore_eos = Some(true);
    }
    d.seed = number(&args, "--seed")?.unwrap_or(0);
    d.warmup = number(&args, "--num-warmups")?.unwrap_or(0);

    // Sampling: vLLM sends temperature 0.0 (greedy) unless told otherwise.
    for (flag, key) in [
        ("--temperature", "temperature"),
        ("--top-p", "top_p"),
        ("--top-k", "top_k"),
        ("--min-p", "min_p"),
        ("--frequency-penalty", "frequency_penalty"),
        ("--presence-penalty", "presence_penalty"),
        ("--repetition-penalty", "repetition_penalty"),
    ] {
        if let Some(v) = args.last(flag) {
            let value = match v.parse::<i64>() {
                Ok(i) if key == "top_k" => Scalar::Int(i),
                _ => Scalar::Float(v.parse().map_err(|_| ScaffoldError::Value {
                    flag: "sampling parameter",
                    value: format!("{flag} {v}"),
                    reason: "not a number".into(),
                })?),
            };
            d.body.push((key.to_string(), value));
        }
    }
    if !args.has("--temperature") {
        d.body.insert(0, ("temperature".into(), Scalar::Float(0.0)));
    }
    if let Some(json) = args.last("--extra-body") {
        extra_body(json, &mut d.body, &mut notes)?;
    }
    for h in args.all("--header") {
        match h.split_once('=') {
            Some((k, v)) => d.headers.push((k.trim().to_string(), v.trim().to_string())),
            None => notes.push(format!("--header {h}: not KEY=VALUE; ignored")),
        }
    }
    for g in args.all("--goodput") {
        let parsed = g
            .split_once(':')
            .and_then(|(k, v)| Some((k, v.trim().parse::<f64>().ok()?)));
        match parsed {
            Some((k @ ("ttft" | "tpot" | "e2el"), ms)) if ms >= 0.0 => {
                let key = if k == "e2el" {
                    "e2e"
                } else if k == "ttft" {
                    "ttft"
                } else {
                    "tpot"
                };
                let ns = (ms * 1e6).round() as u64;
                d.goodput
                    .push((key, Duration(std::time::Duration::from_nanos(ns))));
            }
            _ => notes.push(format!(
                "--goodput {g}: expected ttft:MS, tpot:MS or e2el:MS; ignored"
            )),
        }
    }
    for (flag, _) in &args.given {
        let note = format!("{flag}: {}", no_counterpart(flag));
        if UNMAPPED.contains(&flag.as_str()) && !notes.contains(&note) {
            notes.push(note);
        }
    }
    d.name = "vllm-bench".into();
    d.description = Some("Imported from a vllm bench serve command line".into());
    let flags: Vec<String> = words
        .iter()
        .skip_while(|w| !w.starts_with("--"))
        .cloned()
        .collect();
    d.notes.push(format!(
        "Imported from: vllm bench serve {}",
        shell_line(&flags)
    ));
    d.notes
        .push("by `infermeter import vllm`; what did not carry over:".into());
    let all: Vec<String> = args.notes.into_iter().chain(notes).collect();
    if all.is_empty() {
        d.notes
            .push("  nothing: every flag has its counterpart below.".into());
    }
    d.notes.extend(all.into_iter().map(|n| format!("  - {n}")));
    Ok(d)
}

/// The `--endpoint` forms understood: one per registered API.
fn supported_endpoints() -> &'static str {
    static LIST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LIST.get_or_init(|| {
        let paths: Vec<String> = REGISTRY.iter().map(|a| format!("…{}", a.path())).collect();
        paths.join(" and ")
    })
}

/// The scalar top-level fields of `--extra-body`; nested ones are noted (a scenario's `body`
/// holds numbers, strings and booleans).
fn extra_body(
    json: &str,
    body: &mut Vec<(String, Scalar)>,
    notes: &mut Vec<String>,
) -> Result<(), ScaffoldError> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| ScaffoldError::Value {
        flag: "--extra-body",
        value: json.to_string(),
        reason: format!("not JSON: {e}"),
    })?;
    let Some(map) = v.as_object() else {
        return Err(ScaffoldError::Value {
            flag: "--extra-body",
            value: json.to_string(),
            reason: "not a JSON object".into(),
        });
    };
    for (k, v) in map {
        let s = match v {
            serde_json::Value::Bool(b) => Scalar::Bool(*b),
            serde_json::Value::Number(n) if n.is_i64() => Scalar::Int(n.as_i64().unwrap_or(0)),
            serde_json::Value::Number(n) => Scalar::Float(n.as_f64().unwrap_or(0.0)),
            serde_json::Value::String(s) => Scalar::Str(s.clone()),
            _ => {
                notes.push(format!(
                    "--extra-body field `{k}` is not a number, string or boolean; add it with a hook (docs/hooks.md)"
                ));
                continue;
            }
        };
        body.retain(|(key, _)| key != k);
        body.push((k.clone(), s));
    }
    Ok(())
}

/// Words as a shell would need them typed: quoted where they hold anything unusual.
pub fn shell_line(words: &[String]) -> String {
    let word = |w: &String| {
        if !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
        {
            w.clone()
        } else {
            format!("'{}'", w.replace('\'', r"'\''"))
        }
    };
    words.iter().map(word).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_common_flags_map() {
        let d = import(&words(
            "vllm bench serve --base-url http://gpu:8000 --endpoint /v1/chat/completions --model m \
             --request-rate 10 --num-prompts 200 --random-input-len 512 --random-output-len 64 --seed 7",
        ))
        .unwrap();
        assert_eq!(d.url.as_deref(), Some("http://gpu:8000/v1"));
        assert_eq!(d.api, Api::CHAT);
        assert_eq!(d.model.as_deref(), Some("m"));
        assert_eq!(
            d.load,
            Load::Rate {
                rate: 10.0,
                burstiness: Burstiness::POISSON
            }
        );
        assert_eq!(d.limit, Limit::Requests(200));
        assert_eq!(
            d.data,
            Data::Synthetic {
                input: Length::Fixed(512),
                output: Length::Fixed(64)
            }
        );
        assert_eq!(d.seed, 7);
        assert!(
            d.notes.iter().any(|n| n.contains("nothing")),
            "{:?}",
            d.notes
        );
    }

    #[test]
    fn defaults_underscores_and_notes() {
        let d = import(&words(
            "--model m --max_concurrency 8 --save-result --frobnicate 3 --random-range-ratio 0.5",
        ))
        .unwrap();
        assert_eq!(d.url.as_deref(), Some("http://127.0.0.1:8000/v1"));
        assert_eq!(d.api, Api::COMPLETIONS);
        assert_eq!(d.load, Load::Concurrency(8));
        assert_eq!(d.limit, Limit::Requests(1000));
        assert_eq!(
            d.data,
            Data::Synthetic {
                input: Length::Uniform(512, 1536),
                output: Length::Uniform(64, 192)
            }
        );
        let notes = d.notes.join("\n");
        assert!(notes.contains("unknown flag `--frobnicate 3`"), "{notes}");
        assert!(notes.contains("--save-result: results.json"), "{notes}");
    }

    #[test]
    fn rate_with_a_cap_keeps_the_rate_and_says_so() {
        let d = import(&words(
            "--request-rate 4 --burstiness 0.5 --max-concurrency 2",
        ))
        .unwrap();
        assert_eq!(
            d.load,
            Load::Rate {
                rate: 4.0,
                burstiness: Burstiness::new(0.5).unwrap()
            }
        );
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("--max-concurrency 2 is not carried over"))
        );
        assert!(import(&words("--dataset-name sonnet")).is_err());
        assert!(import(&words("--endpoint /v1/embeddings")).is_err());
    }
}
