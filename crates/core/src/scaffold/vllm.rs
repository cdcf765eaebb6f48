//! `vllm bench serve` (and `benchmarks/benchmark_serving.py`) arguments → a [`Draft`] with
//! vLLM's defaults: `--request-rate inf`, `--num-prompts 1000`, `--dataset-name random` with
//! 1024 input and 128 output tokens, `--seed 0`, `--endpoint /v1/completions`, greedy
//! sampling (`temperature 0.0`) and, for random prompts, `ignore_eos`.
//!
//! Every flag is accounted for: mapped, noted as having no counterpart (with what to do
//! instead), or noted as unknown; the notes head the written file and are returned to the
//! caller. Underscores in flag names are read as dashes, as vLLM's parser does.

use super::vllm_flags::{Args, UNMAPPED, any, no_counterpart, number, positive, split};
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
            let port: u16 =
                number(&args, "--port", "a port, 1 to 65535", |p| *p >= 1)?.unwrap_or(8000);
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
    let num_prompts: u64 =
        number(&args, "--num-prompts", "a request count ≥ 1", |n| *n >= 1)?.unwrap_or(1000);
    d.limit = Limit::Requests(num_prompts);
    d.load = load(&args, num_prompts, &mut notes)?;
    data(&args, &mut d, &mut notes)?;
    d.seed = number(&args, "--seed", "a whole number ≥ 0", any)?.unwrap_or(0);
    d.warmup = number(&args, "--num-warmups", "a request count ≥ 0", any)?.unwrap_or(0);
    body(&args, &mut d.body, &mut notes)?;
    headers(&args, &mut d, &mut notes)?;
    goodput(&args, &mut d.goodput, &mut notes)?;
    d.name = "vllm-bench".into();
    d.description = Some("Imported from a vllm bench serve command line".into());
    head_notes(&mut d, words, args, notes);
    Ok(d)
}

/// The comment heading the file: the command line it came from and what did not carry over
/// (`args`' notes on the words, `notes` on the values, then the flags without a counterpart).
fn head_notes(d: &mut Draft, words: &[String], args: Args, notes: Vec<String>) {
    let mut notes: Vec<String> = args.notes.into_iter().chain(notes).collect();
    for (flag, _) in &args.given {
        let note = format!("{flag}: {}", no_counterpart(flag));
        if UNMAPPED.contains(&flag.as_str()) && !notes.contains(&note) {
            notes.push(note);
        }
    }
    let flags: Vec<String> = words
        .iter()
        .skip_while(|w| !w.starts_with("--"))
        .cloned()
        .collect();
    // The line as given, less its secrets (a header's key, a URL's password).
    d.notes.push(format!(
        "Imported from: vllm bench serve {}",
        shell_line(&crate::redact::command_line(&flags))
    ));
    d.notes
        .push("by `infermeter import vllm`; what did not carry over:".into());
    if notes.is_empty() {
        d.notes
            .push("  nothing: every flag has its counterpart below.".into());
    }
    d.notes
        .extend(notes.into_iter().map(|n| format!("  - {n}")));
}

/// `--request-rate` (default `inf`), `--burstiness` and `--max-concurrency` → how requests
/// arrive. vLLM's `inf` sends every request at once: as many clients as requests, or
/// `--max-concurrency` clients.
fn load(args: &Args, num_prompts: u64, notes: &mut Vec<String>) -> Result<Load, ScaffoldError> {
    let rate = number(
        args,
        "--request-rate",
        "requests per second, a number > 0, or inf to send every request at once",
        |r: &f64| *r > 0.0 && (r.is_finite() || *r == f64::INFINITY),
    )?
    .unwrap_or(f64::INFINITY);
    // Burstiness's own parse refuses what is not finite and > 0.
    let burstiness = number(
        args,
        "--burstiness",
        "a number > 0 (1 is Poisson, < 1 burstier, > 1 more regular)",
        any,
    )?
    .unwrap_or(Burstiness::POISSON);
    let max_concurrency = number(args, "--max-concurrency", "a client count ≥ 1", positive)?;
    let load = match (rate.is_finite(), max_concurrency) {
        (true, cap) => {
            if let Some(n) = cap {
                notes.push(format!(
                    "--max-concurrency {n} is not carried over: an open-loop stage never caps the requests in flight, since a cap \
                     would turn queueing at the server into waiting in the client, which the latencies would then hide; \
                     give --max-concurrency without --request-rate for a closed loop"
                ));
            }
            Load::Rate { rate, burstiness }
        }
        (false, Some(n)) => Load::Concurrency(n),
        (false, None) => {
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
    Ok(load)
}

/// `--dataset-name` and its flags → what is sent: random prompts of the asked lengths (with
/// `ignore_eos`, as vLLM forces for them), a ShareGPT file or JSONL prompts.
fn data(args: &Args, d: &mut Draft, notes: &mut Vec<String>) -> Result<(), ScaffoldError> {
    const TOKENS: &str = "a token count ≥ 1";
    let dataset = args.last("--dataset-name").unwrap_or("random");
    match dataset {
        "random" => {
            let input = number(args, "--random-input-len", TOKENS, positive)?.unwrap_or(1024);
            let output = number(args, "--random-output-len", TOKENS, positive)?.unwrap_or(128);
            let ratio = number(
                args,
                "--random-range-ratio",
                "a number in [0, 1)",
                |r: &f64| (0.0..1.0).contains(r),
            )?
            .unwrap_or(0.0);
            d.data = Data::Synthetic {
                input: ranged(input, ratio),
                output: ranged(output, ratio),
            };
            let prefix = number(args, "--random-prefix-len", "a token count ≥ 0", any)?;
            d.prefix_tokens = prefix.filter(|&p: &u32| p > 0);
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
                output_tokens: number(args, "--sharegpt-output-len", TOKENS, positive)?,
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
                max_tokens: number(args, "--custom-output-len", TOKENS, positive)?,
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
    Ok(())
}

/// A sampling flag, the body field it sets, what it takes (the error's hint), and a check of
/// its value.
type Sampling = (&'static str, &'static str, &'static str, fn(&f64) -> bool);

/// vLLM's sampling flags: the body field each sets and the values vLLM's `SamplingParams`
/// accepts (`--top-k` is an integer, below).
const SAMPLING: &[Sampling] = &[
    ("--temperature", "temperature", "a number ≥ 0", |t| {
        *t >= 0.0
    }),
    ("--top-p", "top_p", "a number in (0, 1]", |p| {
        *p > 0.0 && *p <= 1.0
    }),
    ("--min-p", "min_p", "a number in [0, 1]", |p| {
        (0.0..=1.0).contains(p)
    }),
    (
        "--frequency-penalty",
        "frequency_penalty",
        "a number in [-2, 2]",
        |p| (-2.0..=2.0).contains(p),
    ),
    (
        "--presence-penalty",
        "presence_penalty",
        "a number in [-2, 2]",
        |p| (-2.0..=2.0).contains(p),
    ),
    (
        "--repetition-penalty",
        "repetition_penalty",
        "a number > 0",
        |p| *p > 0.0,
    ),
];

/// The sampling flags as body fields, in vLLM's order, then `--extra-body`'s; vLLM sends
/// temperature 0.0 (greedy) unless told otherwise. Every value is finite and in the range
/// vLLM accepts.
fn body(
    args: &Args,
    body: &mut Vec<(String, Scalar)>,
    notes: &mut Vec<String>,
) -> Result<(), ScaffoldError> {
    if !args.has("--temperature") {
        body.push(("temperature".into(), Scalar::Float(0.0)));
    }
    for &(flag, key, expected, ok) in SAMPLING {
        if let Some(v) = number(args, flag, expected, |v: &f64| v.is_finite() && ok(v))? {
            body.push((key.into(), Scalar::Float(v)));
        }
        if flag == "--top-p" {
            let k = number(
                args,
                "--top-k",
                "a whole number ≥ -1 (-1 or 0: every token)",
                |k: &i64| *k >= -1,
            )?;
            if let Some(k) = k {
                body.push(("top_k".into(), Scalar::Int(k)));
            }
        }
    }
    match args.last("--extra-body") {
        Some(json) => extra_body(json, body, notes),
        None => Ok(()),
    }
}

/// `--header KEY=VALUE …` → the target's headers (a secret one as [`header`] says). A value with a CR or LF (which would make
/// a second header on the wire) or any other control character is refused; the error names
/// the header but does not echo its value, which may be a key.
fn headers(args: &Args, d: &mut Draft, notes: &mut Vec<String>) -> Result<(), ScaffoldError> {
    for h in args.all("--header") {
        let Some((k, v)) = h.split_once('=') else {
            notes.push(format!("--header {h}: not KEY=VALUE; ignored"));
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        let problem = crate::scenario::header_name_problem(k)
            .or_else(|| crate::scenario::header_value_problem(v));
        if let Some(reason) = problem {
            return Err(ScaffoldError::Value {
                flag: "--header",
                value: k.escape_debug().to_string(),
                reason,
            });
        }
        header(d, k, v, notes);
    }
    Ok(())
}

/// A checked `--header NAME=VALUE`: kept as a `header` line, unless its value is a secret,
/// which a scenario meant for git must not hold: `Authorization: Bearer KEY` becomes `api-key
/// env="OPENAI_API_KEY"` (which sends the same header), any other secret header is left out
/// with a note.
fn header(d: &mut Draft, name: &str, value: &str, notes: &mut Vec<String>) {
    if !crate::redact::is_secret_name(name) {
        d.headers.push((name.to_string(), value.to_string()));
        return;
    }
    let bearer = value
        .split_once(char::is_whitespace)
        .is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"));
    if name.eq_ignore_ascii_case("authorization") && bearer {
        d.api_key_env = Some("OPENAI_API_KEY".into());
        notes.push(format!(
            "--header {name}=Bearer …: written as api-key env=\"OPENAI_API_KEY\" (the key stays \
             out of the file); export OPENAI_API_KEY with the key before running"
        ));
    } else {
        notes.push(format!(
            "--header {name}=…: holds a secret, left out of the file (a scenario has no way to \
             read a header from the environment; a bearer key goes in api-key env=\"VARIABLE\")"
        ));
    }
}

/// `--goodput ttft:MS tpot:MS e2el:MS` → goodput's per-request SLOs; a known key with a value
/// that is not a finite number of milliseconds ≥ 0 is an error, anything else a note.
fn goodput(
    args: &Args,
    goodput: &mut Vec<(&'static str, Duration)>,
    notes: &mut Vec<String>,
) -> Result<(), ScaffoldError> {
    for g in args.all("--goodput") {
        let key = match g.split_once(':').map(|(k, v)| (k.trim(), v)) {
            Some(("ttft", v)) => ("ttft", v),
            Some(("tpot", v)) => ("tpot", v),
            Some(("e2el", v)) => ("e2e", v),
            _ => {
                notes.push(format!(
                    "--goodput {g}: expected ttft:MS, tpot:MS or e2el:MS; ignored"
                ));
                continue;
            }
        };
        let (key, ms) = key;
        let ms = ms
            .trim()
            .parse::<f64>()
            .ok()
            // A scenario's durations end at 1e9 s.
            .filter(|ms| (0.0..=1e12).contains(ms))
            .ok_or_else(|| ScaffoldError::Value {
                flag: "--goodput",
                value: g.to_string(),
                reason: "expected a latency in milliseconds, 0 to 1e12, e.g. ttft:200".into(),
            })?;
        let ns = (ms * 1e6).round() as u64;
        goodput.push((key, Duration(std::time::Duration::from_nanos(ns))));
    }
    Ok(())
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
        assert!(import(&words("--endpoint /v1/audio/transcriptions")).is_err());
        // A pooling API is a registered one: imported as its own kind.
        assert!(import(&words("--endpoint /v1/embeddings")).is_ok());
    }
}
