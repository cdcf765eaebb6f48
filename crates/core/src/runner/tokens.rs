//! The preflight's tokenizer check: a scenario counts its prompts with its own tokenizer
//! (`cl100k_base` unless it names another), and a server that counts them otherwise makes every
//! stage's prompt counts disagree with the plan — `scenarios/real-engine.kdl` run against a
//! small llama.cpp model exited 4 with both stages untrusted for that alone. When the server
//! offers `/tokenize` (vLLM, SGLang, llama.cpp), the first request's prompt is counted by both
//! before the clock starts, and a disagreement says which tokenizer to name.

use std::time::Duration;

use super::options::RunOptions;
use crate::client::Client;
use crate::dataset::{PromptFactory, Tokenizer};
use crate::plan::Plan;

/// How far the two counts may differ, as a share of ours: the threshold at which a request's
/// prompt count is taken to disagree with the plan's.
const TOLERANCE: f64 = 0.05;

/// How long the check may take: it only advises, so a slow server must not hold the run.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// What the two tokenizers said of the sample prompt, when they disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Disagreement {
    /// The scenario's tokenizer's name and count.
    pub(super) ours: (String, u64),
    /// The server's count.
    pub(super) theirs: u64,
    /// A built-in tokenizer that counts exactly as the server does, if one does.
    pub(super) instead: Option<&'static str>,
}

impl std::fmt::Display for Disagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (name, ours) = (&self.ours.0, self.ours.1);
        write!(
            f,
            "the server's /tokenize counts the first prompt as {} tokens where the scenario's \
             tokenizer `{name}` counts {ours}: prompt lengths and token counts will disagree with \
             the plan and its stages be flagged untrusted; ",
            self.theirs
        )?;
        match self.instead {
            Some(builtin) => write!(
                f,
                "it counts as `{builtin}` does: set `tokenizer \"{builtin}\"`"
            ),
            None => write!(
                f,
                "name the served model's own tokenizer in a top-level line of the scenario, \
                 `tokenizer \"path/to/tokenizer.json\"` (the tokenizer.json of the model's \
                 Hugging Face repository, beside the scenario)"
            ),
        }
    }
}

/// The check, before the clock starts: a disagreement is a warning now and a note on every
/// stage (the text returned). `None` when interrupted first.
pub(super) async fn preflight(
    client: &Client,
    plan: &Plan,
    factory: &PromptFactory,
    opts: &RunOptions,
) -> Option<Option<String>> {
    let note = tokio::select! {
        biased;
        _ = opts.interrupt.cancelled() => return None,
        d = check(client, plan, factory) => d.map(|d| d.to_string()),
    };
    if let Some(note) = &note {
        opts.observer.warning(note);
    }
    Some(note)
}

/// Counts the plan's first prompt with the scenario's tokenizer and the server's `/tokenize`;
/// `Some` when they disagree by more than [`TOLERANCE`]. `None` also when the server has no
/// `/tokenize`, or takes longer than [`CHECK_TIMEOUT`] to answer.
async fn check(client: &Client, plan: &Plan, factory: &PromptFactory) -> Option<Disagreement> {
    let stage = plan.stages_in_order().next()?;
    let recipe = plan.request(stage, 0);
    let prompt = factory.prompt(stage.dataset, recipe.input_tokens, recipe.item);
    let text = prompt.as_text();
    if text.is_empty() {
        return None;
    }
    let theirs = tokio::time::timeout(CHECK_TIMEOUT, client.server_token_count(text))
        .await
        .ok()
        .flatten()?;
    judge(factory.tokenizer(), text, theirs)
}

/// The disagreement between `tokenizer`'s count of `text` and the server's `theirs`, if any.
fn judge(tokenizer: &Tokenizer, text: &str, theirs: u64) -> Option<Disagreement> {
    let ours = tokenizer.count(text) as u64;
    let allowed = (ours as f64 * TOLERANCE).max(1.0);
    if (theirs as f64 - ours as f64).abs() <= allowed {
        return None;
    }
    let instead = [Tokenizer::cl100k_base(), Tokenizer::o200k_base()]
        .into_iter()
        .find(|t| t.name() != tokenizer.name() && t.count(text) as u64 == theirs)
        .map(|t| match t.name() {
            "o200k_base" => "o200k_base",
            _ => "cl100k_base",
        });
    Some(Disagreement {
        ours: (tokenizer.name().to_string(), ours),
        theirs,
        instead,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_that_agree_within_five_percent_pass() {
        let t = Tokenizer::cl100k_base();
        let text = "the quick brown fox jumps over the lazy dog ".repeat(10);
        let ours = t.count(&text) as u64;
        assert_eq!(judge(&t, &text, ours), None);
        assert_eq!(judge(&t, &text, ours + 1), None);
        let d = judge(&t, &text, ours * 2).unwrap();
        assert_eq!(d.ours, ("cl100k_base".to_string(), ours));
        assert!(d.to_string().contains("tokenizer.json"), "{d}");
    }

    #[test]
    fn a_built_in_tokenizer_that_counts_as_the_server_is_named() {
        // Text the two tiktoken vocabularies count differently.
        let text = "Привет, как дела? これは日本語のテキストです。".repeat(8);
        let (cl, o) = (
            Tokenizer::cl100k_base().count(&text) as u64,
            Tokenizer::o200k_base().count(&text) as u64,
        );
        assert!(cl as f64 > o as f64 * 1.05, "{cl} vs {o}");
        let d = judge(&Tokenizer::cl100k_base(), &text, o).unwrap();
        assert_eq!(d.instead, Some("o200k_base"));
        assert!(
            d.to_string().contains(r#"set `tokenizer "o200k_base"`"#),
            "{d}"
        );
    }
}
