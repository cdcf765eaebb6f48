//! A test-only API kind, the proof of "Adding an API kind" in `docs/architecture.md`: this
//! file, two lines in `protocol.rs` (its module, its `REGISTRY` entry) and its simulator side
//! (`src/sim/apis/echo.rs` and two lines in `src/sim/apis.rs`) are all it takes for
//! `api "echo"` to parse, plan, run and be served. It posts
//! `{"model","input","max_tokens","stream",…}` to `/echo` and reads OpenAI `text` chunks back.

use super::api::ApiKind;
use super::body::{self, PromptRef, Request};
use super::chunk::{self, ChunkError, Event};

/// The test API.
pub struct Echo;

impl ApiKind for Echo {
    fn name(&self) -> &'static str {
        "echo"
    }

    fn help(&self) -> &'static str {
        "`POST {base}/echo` with `input` (a test-only API)."
    }

    fn path(&self) -> &'static str {
        "/echo"
    }

    fn conversation(&self) -> bool {
        false
    }

    /// None: the simulator counts `input` exactly as the plan does.
    fn template_tokens(&self) -> u32 {
        0
    }

    fn write_body(&self, out: &mut Vec<u8>, req: &Request<'_>) {
        body::open(out, req.model);
        out.extend_from_slice(b",\"input\":");
        match req.prompt {
            PromptRef::Text(t) => body::json_str(out, t),
            PromptRef::Messages(m) => {
                let joined: Vec<&str> = m.iter().map(|m| m.content).collect();
                body::json_str(out, &joined.join(" "));
            }
        }
        body::streamed_generation(out, req);
    }

    fn decode_event<'a>(&self, data: &'a str) -> Result<Event<'a>, ChunkError> {
        chunk::openai_event(data)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::Value;

    use crate::app::{RunSettings, run_scenario};

    /// KDL → plan → client → simulator → results for an API no other file names.
    #[test]
    fn a_new_api_kind_runs_end_to_end() {
        let dir = tempfile::tempdir().unwrap();
        let settings = RunSettings {
            scenario_text: Some(
                r#"
scenario "echo" { seed 1; }
target "sim" { api "echo"; decode-base "1ms"; }
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
stage "s" { dataset "d"; arrival "constant" rate=50; requests 8; }
"#
                .into(),
            ),
            out_dir: Some(dir.path().join("out")),
            plots: false,
            // A loaded test machine may flag the client's send lag; trust is not under test.
            untrusted: Some(crate::sla::Untrusted::Judge),
            ..RunSettings::new(dir.path().join("echo.kdl"))
        };
        run_scenario(&settings, Arc::new(())).expect("the run is carried out");
        let text = std::fs::read_to_string(dir.path().join("out/results.json")).unwrap();
        let results: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(results["target"]["api"], "echo");
        let stage = &results["stages"][0];
        assert_eq!(stage["requests"]["ok"], 8, "{}", stage["requests"]);
        assert_eq!(stage["tokens"]["output"], 32);
        assert_eq!(stage["tokens"]["from_usage"], 8);
        // The simulator counted the `input` it was sent exactly as the plan did.
        assert_eq!(stage["tokens"]["input"], 8 * 16);
        assert_eq!(stage["tokens"]["mismatched"], 0);
    }
}
