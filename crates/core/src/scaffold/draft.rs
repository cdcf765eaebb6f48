//! [`Draft`]: a scenario described the way a benchmark command line describes one (a URL, a
//! model, a rate or a concurrency, token lengths or a data set file, a count or a duration,
//! SLAs), and [`Draft::to_kdl`], which writes it as a commented KDL file that
//! [`crate::scenario::parse_str`] accepts.

use std::fmt::Write as _;

use crate::protocol::{Api, REGISTRY};
use crate::units::{Burstiness, Duration};

/// A scenario to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub name: String,
    pub description: Option<String>,
    pub seed: u64,
    /// `None`: the embedded simulator.
    pub url: Option<String>,
    pub model: Option<String>,
    pub api: Api,
    /// `Some` writes `ignore-eos` explicitly (the scenario's default is `#true`).
    pub ignore_eos: Option<bool>,
    /// `api-key env="…"`: the variable the key is read from (an imported `Authorization:
    /// Bearer` header becomes this, so the key itself never enters the file).
    pub api_key_env: Option<String>,
    pub headers: Vec<(String, String)>,
    /// Extra JSON body fields (sampling parameters).
    pub body: Vec<(String, Scalar)>,
    pub load: Load,
    pub data: Data,
    /// A prefix of this many tokens shared by every prompt.
    pub prefix_tokens: Option<u32>,
    pub limit: Limit,
    /// Warm-up requests; 0 writes none.
    pub warmup: u64,
    /// SLA assertions, already checked by [`crate::sla::parse`].
    pub slas: Vec<String>,
    /// Per-request SLOs of goodput: `ttft`, `tpot`, `itl`, `e2e`.
    pub goodput: Vec<(&'static str, Duration)>,
    /// Comment lines at the top: the command it came from, what was translated how, what had
    /// no counterpart.
    pub notes: Vec<String>,
}

/// A body value KDL can hold.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// Open loop at `rate` requests/s: Poisson, or gamma when `burstiness` is not 1.
    Rate { rate: f64, burstiness: Burstiness },
    /// Closed loop: this many clients.
    Concurrency(u32),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    Synthetic {
        input: Length,
        output: Length,
    },
    /// A ShareGPT file (a path or an `hf://` reference); `output_tokens` fixes every output.
    ShareGpt {
        path: String,
        output_tokens: Option<u32>,
    },
    /// JSONL prompts; `max_tokens` for lines that give none.
    Jsonl {
        path: String,
        max_tokens: Option<u32>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    Fixed(u32),
    /// Uniform, bounds inclusive.
    Uniform(u32, u32),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    Duration(Duration),
    Requests(u64),
}

impl Default for Draft {
    fn default() -> Self {
        Draft {
            name: "benchmark".into(),
            description: None,
            seed: 0,
            url: None,
            model: None,
            api: Api::default(),
            ignore_eos: None,
            api_key_env: None,
            headers: Vec::new(),
            body: Vec::new(),
            load: Load::Rate {
                rate: 5.0,
                burstiness: Burstiness::POISSON,
            },
            data: Data::Synthetic {
                input: Length::Fixed(1024),
                output: Length::Fixed(128),
            },
            prefix_tokens: None,
            limit: Limit::Duration(Duration::from_millis(60_000)),
            warmup: 10,
            slas: Vec::new(),
            goodput: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// A KDL string literal.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `text` in lines of at most `width` characters (a longer word stays whole); a line that
/// starts as a list item (`  - `) continues indented under its text.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let body = text.trim_start_matches([' ', '-']);
    let lead = &text[..text.len() - body.len()];
    let cont = " ".repeat(lead.len());
    let mut lines = Vec::new();
    let mut line = lead.to_string();
    let mut empty = true;
    for word in body.split_whitespace() {
        if !empty && line.len() + 1 + word.len() > width {
            lines.push(std::mem::replace(&mut line, cont.clone()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    lines.push(line);
    lines
}

/// A number as KDL writes it (`10`, `2.5`; `1.0e300` for a very large or very small one,
/// which `{}` would write as hundreds of digits: more than a KDL integer holds).
fn num(v: f64) -> String {
    let s = format!("{v}");
    if s.len() <= 24 {
        return s;
    }
    let e = format!("{v:e}");
    if e.contains('.') {
        e
    } else {
        e.replacen('e', ".0e", 1)
    }
}

/// A node name: bare when it is a plain identifier, quoted otherwise.
fn ident(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain { s.to_string() } else { quote(s) }
}

fn length(l: Length) -> String {
    match l {
        Length::Fixed(n) => n.to_string(),
        Length::Uniform(a, b) if a == b => a.to_string(),
        Length::Uniform(a, b) => format!("\"uniform\" min={a} max={b}"),
    }
}

fn scalar(v: &Scalar) -> String {
    match v {
        Scalar::Int(i) => i.to_string(),
        Scalar::Float(f) => {
            let s = num(*f);
            // `0` would be an integer in JSON; keep a float a float.
            if s.contains('.') { s } else { format!("{s}.0") }
        }
        Scalar::Bool(b) => if *b { "#true" } else { "#false" }.to_string(),
        Scalar::Str(s) => quote(s),
    }
}

impl Draft {
    /// The scenario as a commented KDL file.
    pub fn to_kdl(&self) -> String {
        let mut o = String::new();
        self.write(&mut o).expect("writing to a String cannot fail");
        o
    }

    fn write(&self, o: &mut String) -> std::fmt::Result {
        for note in &self.notes {
            for line in wrap(note, 92) {
                writeln!(o, "// {line}")?;
            }
        }
        writeln!(
            o,
            "// Check this file into git and run it with `infermeter run FILE`; `infermeter plan FILE`\n\
             // shows what it sends. The language: docs/scenario.md."
        )?;
        writeln!(o, "scenario {} {{", quote(&self.name))?;
        if let Some(d) = &self.description {
            writeln!(o, "    description {}", quote(d))?;
        }
        writeln!(
            o,
            "    seed {}    // every random choice (lengths, arrival times, prompts) follows it",
            self.seed
        )?;
        writeln!(o, "}}\n")?;
        self.write_target(o)?;
        self.write_data(o)?;
        if self.warmup > 0 {
            writeln!(o, "// Sent first and left out of every metric.")?;
            writeln!(o, "warmup requests={}\n", self.warmup)?;
        }
        self.write_stage(o)?;
        self.write_sla(o)?;
        if !self.goodput.is_empty() {
            let parts: Vec<String> = self
                .goodput
                .iter()
                .map(|(k, v)| format!("{k}={}", quote(&v.to_string())))
                .collect();
            writeln!(
                o,
                "\n// Goodput counts the requests/s that met every one of these."
            )?;
            writeln!(o, "goodput {}", parts.join(" "))?;
        }
        Ok(())
    }

    fn write_target(&self, o: &mut String) -> std::fmt::Result {
        match &self.url {
            Some(url) => {
                writeln!(
                    o,
                    "// An OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp, Ollama). To point the\n\
                     // same file elsewhere: infermeter run FILE --url URL --model NAME"
                )?;
                writeln!(o, "target {} {{", quote(url))?;
            }
            None => {
                writeln!(
                    o,
                    "// The embedded simulator answers: no server needed. For a real server write its\n\
                     // base URL here (target \"http://127.0.0.1:8000/v1\"), or run with --url URL."
                )?;
                writeln!(o, "target \"sim\" {{")?;
            }
        }
        match &self.model {
            Some(m) => writeln!(o, "    model {}", quote(m))?,
            None => writeln!(
                o,
                "    // model \"NAME\"    // default: the first model /v1/models lists"
            )?,
        }
        let apis: Vec<String> = REGISTRY
            .iter()
            .map(|a| format!("\"{a}\" ({})", a.path()))
            .collect();
        writeln!(o, "    api {}    // {}", self.api, apis.join(" or "))?;
        writeln!(o, "    timeout \"60s\"")?;
        match &self.api_key_env {
            Some(var) => writeln!(
                o,
                "    api-key env={}    // the variable's name; the key never enters a file",
                quote(var)
            )?,
            None => writeln!(
                o,
                "    // api-key env=\"OPENAI_API_KEY\"    // the variable's name; the key never enters a file"
            )?,
        }
        for (k, v) in &self.headers {
            writeln!(o, "    header {} {}", quote(k), quote(v))?;
        }
        if let Some(b) = self.ignore_eos {
            writeln!(
                o,
                "    ignore-eos {}    // #true: every output has exactly its planned length",
                if b { "#true" } else { "#false" }
            )?;
        }
        if !self.body.is_empty() {
            let fields: Vec<String> = self
                .body
                .iter()
                .map(|(k, v)| format!("{} {}", ident(k), scalar(v)))
                .collect();
            writeln!(o, "    body {{ {} }}", fields.join("; "))?;
        }
        writeln!(o, "}}\n")
    }

    fn write_data(&self, o: &mut String) -> std::fmt::Result {
        match &self.data {
            Data::Synthetic { input, output } => {
                writeln!(
                    o,
                    "// Prompts of exact token lengths (counted with cl100k_base unless a `tokenizer`\n\
                     // \"path/to/tokenizer.json\" line names the model's own)."
                )?;
                writeln!(o, "dataset \"prompts\" {{")?;
                writeln!(o, "    synthetic {{")?;
                writeln!(o, "        input-tokens {}", length(*input))?;
                // A pooling API generates nothing: an output length would be a no-op line.
                if self.api.kind().answer().generates() {
                    writeln!(
                        o,
                        "        output-tokens {}    // sent as max_tokens",
                        length(*output)
                    )?;
                }
                writeln!(o, "    }}")?;
            }
            Data::ShareGpt {
                path,
                output_tokens,
            } => {
                // As many conversations as the stage may send, its maximum included.
                let count = match (self.limit, self.undecidable()) {
                    (Limit::Requests(_), Some(u)) => format!(" count={}", u.max_requests),
                    (Limit::Requests(n), None) => format!(" count={n}"),
                    (Limit::Duration(_), _) => String::new(),
                };
                let out = output_tokens
                    .filter(|_| self.api.kind().answer().generates())
                    .map_or(String::new(), |n| format!(" output-tokens={n}"));
                writeln!(
                    o,
                    "// ShareGPT conversations, sampled and filtered as vLLM's benchmark does."
                )?;
                if path.starts_with("hf://") {
                    writeln!(
                        o,
                        "// Fetch the file once with: infermeter dataset fetch sharegpt"
                    )?;
                }
                writeln!(o, "dataset \"prompts\" {{")?;
                writeln!(o, "    sharegpt {}{count}{out}", quote(path))?;
            }
            Data::Jsonl { path, max_tokens } => {
                let max = max_tokens.map_or(String::new(), |n| format!(" max-tokens={n}"));
                writeln!(
                    o,
                    "// Your prompts, one JSON object a line: {{\"prompt\": …}} or {{\"messages\": […]}}."
                )?;
                writeln!(o, "dataset \"prompts\" {{")?;
                writeln!(o, "    jsonl {}{max}", quote(path))?;
            }
        }
        if let Some(p) = self.prefix_tokens {
            writeln!(
                o,
                "    shared-prefix groups=1 tokens={p}    // the same prefix on every prompt"
            )?;
        }
        writeln!(o, "}}\n")
    }

    fn write_stage(&self, o: &mut String) -> std::fmt::Result {
        writeln!(o, "stage \"main\" {{")?;
        writeln!(o, "    dataset \"prompts\"")?;
        match self.load {
            Load::Rate { rate, burstiness } if burstiness == Burstiness::POISSON => writeln!(
                o,
                "    arrival \"poisson\" rate={}    // requests/s, open loop: latency counts from each request's scheduled time",
                num(rate)
            )?,
            Load::Rate { rate, burstiness } => writeln!(
                o,
                "    arrival \"gamma\" rate={} burstiness={}    // < 1 burstier than Poisson, > 1 more regular",
                num(rate),
                num(burstiness.get())
            )?,
            Load::Concurrency(n) => writeln!(
                o,
                "    arrival \"concurrency\" clients={n}    // closed loop: each client sends its next request when its last one ends"
            )?,
        }
        let short = self.undecidable();
        if let Some(s) = &short {
            for line in wrap(&s.why(), 88) {
                writeln!(o, "    // {line}")?;
            }
        }
        match (self.limit, short) {
            (Limit::Requests(n), Some(s)) => {
                writeln!(o, "    requests {n} until-decided max={}", s.max_requests)?
            }
            (Limit::Duration(d), Some(s)) => writeln!(
                o,
                "    duration {} until-decided max={}",
                quote(&d.to_string()),
                quote(&s.max_duration(self).to_string())
            )?,
            (Limit::Requests(n), None) => {
                writeln!(o, "    requests {n}    // or: duration \"60s\"")?
            }
            (Limit::Duration(d), None) => writeln!(
                o,
                "    duration {}    // or: requests 200",
                quote(&d.to_string())
            )?,
        }
        writeln!(o, "}}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped() {
        assert_eq!(quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(ident("top_p"), "top_p");
        assert_eq!(ident("x.y"), "\"x.y\"");
        assert_eq!(scalar(&Scalar::Float(0.0)), "0.0");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(10.0), "10");
        assert_eq!(num(1e300), "1.0e300");
        assert_eq!(num(2.5e-300), "2.5e-300");
        assert_eq!(scalar(&Scalar::Float(1e300)), "1.0e300");
    }

    #[test]
    fn a_stage_too_short_to_pass_is_written_until_decided() {
        // The defaults: about 300 requests (5/s for 60 s) against `error_rate < 1%` (381).
        let kdl = Draft::default().to_kdl();
        assert!(
            kdl.contains("duration \"1m\" until-decided max=\"320s\""),
            "{kdl}"
        );
        assert!(kdl.contains("needs at least 381 requests"), "{kdl}");
        let parsed = crate::scenario::parse_str(std::path::Path::new("d.kdl"), &kdl, &[]);
        assert!(parsed.is_ok(), "{kdl}");

        let short = Draft {
            limit: Limit::Requests(200),
            slas: vec!["ttft.p95 < 200ms".into(), "itl.p99 < 40ms".into()],
            ..Draft::default()
        };
        assert!(
            short
                .to_kdl()
                .contains("requests 200 until-decided max=1200")
        );

        // Enough requests: written as given.
        let enough = Draft {
            limit: Limit::Requests(500),
            ..Draft::default()
        };
        let kdl = enough.to_kdl();
        assert!(
            kdl.contains("requests 500    //") && !kdl.contains("until-decided"),
            "{kdl}"
        );
    }
}
