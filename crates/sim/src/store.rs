//! The Responses API's response store: a request with `"store": true` keeps its response's
//! whole context (its prompt, and the stored context it continued, then its output) under its
//! id (`resp_sim-N`) once its last token is written; a request naming
//! `previous_response_id` continues that context: its prompt is the stored context followed
//! by its own input, counted in `usage.input_tokens` and hashed into the prefix cache as one
//! sequence, so a continued conversation hits the cache as a resent one would. An id it does
//! not hold (never stored, evicted, or not the simulator's) is answered 404 as OpenAI does.
//!
//! Bounded: at most `response-store` responses (the oldest stored go first) and, per
//! response, `response-store-max-tokens` tokens of context (a longer one is not stored). An
//! entry holds its token count and, with `prefix-cache`, its block hashes (8 bytes per
//! `prefix-cache-block` tokens), never its text.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::tokens::Chain;
use super::wire::GenRequest;
use super::words;
use crate::protocol::Api;

/// The prefix of the simulator's response ids (`resp_sim-7`).
pub(crate) const ID_PREFIX: &str = "resp_sim-";

/// A conversation as the server holds it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Context {
    /// Its tokens.
    pub(crate) tokens: u64,
    /// Its block hashes, with `prefix-cache`.
    pub(crate) chain: Option<Chain>,
    /// The function calls the stored response made (their `call_id`s): a continuation may
    /// answer them with `function_call_output` items; one naming any other call is refused.
    pub(crate) calls: Vec<Box<str>>,
}

impl Context {
    /// The context with a request's prompt ids after it (`ids` empty without `prefix-cache`,
    /// whose chain is then `None`).
    /// The calls are the stored response's, not the continuation's: they are dropped.
    pub(crate) fn then(mut self, prompt_tokens: u64, ids: &[u32], block: Option<u16>) -> Self {
        self.calls = Vec::new();
        self.tokens = self.tokens.saturating_add(prompt_tokens);
        if let Some(block) = block {
            self.chain
                .get_or_insert_with(Chain::default)
                .extend(ids.iter().copied(), block);
        }
        self
    }
}

/// A request's prefix blocks (its conversation's, with `prefix-cache`) and, when it asked
/// for `store`, its response to keep; `tool` is the function its answer calls, if it is a
/// tool call.
pub(crate) fn pending(
    store: &Arc<ResponseStore>,
    conversation: Context,
    (id, tool): (u64, Option<&str>),
    keep: bool,
) -> (Vec<u64>, Option<Pending>) {
    let blocks = conversation
        .chain
        .as_ref()
        .map(|c| c.blocks.clone())
        .unwrap_or_default();
    let pending = keep.then(|| Pending {
        store: store.clone(),
        id,
        context: conversation,
        tool: tool.map(Into::into),
    });
    (blocks, pending)
}

/// Stored responses, oldest first.
pub(crate) struct ResponseStore {
    capacity: usize,
    max_tokens: u64,
    block: Option<u16>,
    held: Mutex<Held>,
    stored: AtomicU64,
    too_long: AtomicU64,
    evicted: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    continued_tokens: AtomicU64,
}

#[derive(Default)]
struct Held {
    by_id: HashMap<u64, Context>,
    order: VecDeque<u64>,
}

/// A response to store once its last token is written (see `scheduler.rs`).
pub(crate) struct Pending {
    pub(crate) store: Arc<ResponseStore>,
    pub(crate) id: u64,
    /// Its context before its output: the stored one it continued, then its prompt.
    pub(crate) context: Context,
    /// The function its answer calls, when the answer is a tool call (`tools.rs`).
    pub(crate) tool: Option<Box<str>>,
}

impl Pending {
    /// Stores the response, its `output` tokens written: before its last token's bytes
    /// leave, so that a client continuing at once finds it.
    pub(crate) fn commit(self, output: u64) {
        let store = self.store.clone();
        store.commit(self, output);
    }
}

/// What a Responses request asks of the store: with `previous_response_id`, the stored
/// conversation goes before its prompt (`req.prompt_tokens` then counts both); with either
/// that or `store`, the conversation the request makes (its prefix blocks and what a stored
/// response continues). `None` for a request that asks neither; for an id not held, the
/// status and body of the 404 to answer; for a `function_call_output` naming a call the
/// stored response did not make, those of OpenAI's 400.
pub(crate) fn asked(
    store: &ResponseStore,
    api: Api,
    req: &mut GenRequest,
) -> Result<Option<Context>, (u16, String)> {
    if !api.kind().keeps_responses() {
        return Ok(None);
    }
    let before = match &req.previous_response_id {
        Some(id) => store.context_of(id).map_err(|body| (404, body))?,
        None if req.store => Context::default(),
        None => return Ok(None),
    };
    // Each result naming no call of the request must name one of the stored response's.
    if let Some(id) = req
        .answered
        .iter()
        .find(|id| !before.calls.iter().any(|c| **c == ***id))
    {
        let r = super::tool_results::unknown_call(0, id, true);
        return Err((
            400,
            super::wire::error_body(400, "BadRequestError", &r.message, Some(r.param)),
        ));
    }
    let context = before.then(req.prompt_tokens, &req.prompt_ids, store.block);
    req.prompt_tokens = context.tokens;
    Ok(Some(context))
}

impl ResponseStore {
    /// The store `config` sizes (`response-store`, `response-store-max-tokens`), keeping
    /// block hashes with `prefix-cache`.
    pub(crate) fn of(config: &super::config::SimConfig) -> Self {
        ResponseStore::new(
            config.response_store,
            config.response_store_max_tokens,
            config.prefix_cache.then_some(config.prefix_cache_block),
        )
    }

    /// A store of at most `capacity` responses of at most `max_tokens` tokens each; `block`
    /// is the prefix cache's block size when it is on.
    pub(crate) fn new(capacity: u32, max_tokens: u64, block: Option<u16>) -> Self {
        ResponseStore {
            capacity: capacity as usize,
            max_tokens,
            block,
            held: Mutex::default(),
            stored: AtomicU64::new(0),
            too_long: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            continued_tokens: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        // A panic while holding it leaves a usable map: take it over.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The stored context of `previous_response_id`, or the body of the 404 OpenAI answers
    /// for an id it does not hold.
    pub(crate) fn context_of(&self, id: &str) -> Result<Context, String> {
        let found = id
            .strip_prefix(ID_PREFIX)
            .and_then(|n| n.parse::<u64>().ok())
            .and_then(|n| self.lock().by_id.get(&n).cloned());
        match found {
            Some(c) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                self.continued_tokens.fetch_add(c.tokens, Ordering::Relaxed);
                Ok(c)
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                Err(not_found(id))
            }
        }
    }

    /// Stores `p` with its `output` tokens (request `p.id`'s first ones) after its context;
    /// the oldest responses go beyond the capacity. A context over the per-response cap is
    /// not stored.
    pub(crate) fn commit(&self, p: Pending, output: u64) {
        let mut context = p.context;
        let call = p
            .tool
            .as_deref()
            .map(|name| call_tokens(p.id, name, output));
        let added = call.as_ref().map_or(output, |ids| ids.len() as u64);
        context.tokens = context.tokens.saturating_add(added);
        if context.tokens > self.max_tokens || self.capacity == 0 {
            self.too_long.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if let (Some(chain), Some(block)) = (&mut context.chain, self.block) {
            match &call {
                Some(ids) => chain.extend(ids.iter().copied(), block),
                None => {
                    let ids = words::word_ids();
                    chain.extend((0..output).map(|i| ids[words::word_index(p.id, i)]), block);
                }
            }
        }
        // The calls a continuation may answer: this response's, none of an earlier one's.
        context.calls = match call {
            Some(_) => vec![format!("{}{}", super::tool_results::SIM_ID_PREFIX, p.id).into()],
            None => Vec::new(),
        };
        let mut held = self.lock();
        if held.by_id.insert(p.id, context).is_none() {
            held.order.push_back(p.id);
        }
        let mut evicted = 0;
        while held.order.len() > self.capacity {
            if let Some(old) = held.order.pop_front() {
                held.by_id.remove(&old);
                evicted += 1;
            }
        }
        drop(held);
        self.stored.fetch_add(1, Ordering::Relaxed);
        self.evicted.fetch_add(evicted, Ordering::Relaxed);
    }

    /// The counters in Prometheus' text format.
    pub(crate) fn render(&self, out: &mut String) {
        let held = self.lock().order.len() as u64;
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let rows = [
            (
                "infermeter_sim_response_store_entries",
                "gauge",
                "Responses held in the response store.",
                held,
            ),
            (
                "infermeter_sim_responses_stored_total",
                "counter",
                "Responses stored (requests with store: true that completed).",
                load(&self.stored),
            ),
            (
                "infermeter_sim_responses_not_stored_total",
                "counter",
                "Responses not stored: their context was over response-store-max-tokens.",
                load(&self.too_long),
            ),
            (
                "infermeter_sim_responses_evicted_total",
                "counter",
                "Stored responses evicted, oldest first, beyond response-store.",
                load(&self.evicted),
            ),
            (
                "infermeter_sim_previous_response_hits_total",
                "counter",
                "Requests whose previous_response_id the store held.",
                load(&self.hits),
            ),
            (
                "infermeter_sim_previous_response_misses_total",
                "counter",
                "Requests whose previous_response_id the store did not hold (answered 404).",
                load(&self.misses),
            ),
            (
                "infermeter_sim_previous_response_tokens_total",
                "counter",
                "Prompt tokens taken from stored responses (not sent in the requests).",
                load(&self.continued_tokens),
            ),
        ];
        for (name, kind, help, value) in rows {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            let _ = writeln!(out, "{name} {value}");
        }
    }
}

/// The token ids of request `id`'s tool call as a resent conversation carries it back (a
/// `function_call` item's name, then its arguments: `output` words inside `{"text":"…"}`,
/// see `tools.rs`), so a continuation processes what a resent conversation would.
fn call_tokens(id: u64, name: &str, output: u64) -> Vec<u32> {
    let mut arguments = String::from("{\"text\":\"");
    for i in 0..output {
        arguments.push_str(words::word(id, i));
    }
    arguments.push_str("\"}");
    let mut sink = super::tokens::PromptSink::collecting();
    sink.text(name);
    sink.text(&arguments);
    sink.into_ids()
}

/// The body of OpenAI's 404 for a `previous_response_id` it does not hold, the id quoted
/// (bounded: it is the client's text, and serde_json escapes it).
fn not_found(id: &str) -> String {
    let shown: String = id.chars().take(256).collect();
    let body = serde_json::json!({
        "error": {
            "message": format!("Previous response with id '{shown}' not found."),
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found",
        }
    });
    body.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(id: u64, tokens: u64) -> Pending {
        Pending {
            store: Arc::new(ResponseStore::new(0, 0, None)),
            id,
            context: Context::default().then(tokens, &[], None),
            tool: None,
        }
    }

    #[test]
    fn stores_continues_and_evicts_oldest_first() {
        let s = ResponseStore::new(2, 1_000, None);
        s.commit(pending(1, 10), 5);
        assert_eq!(s.context_of("resp_sim-1").unwrap().tokens, 15);
        s.commit(pending(2, 20), 5);
        s.commit(pending(3, 30), 5);
        assert!(s.context_of("resp_sim-1").is_err(), "the oldest went");
        assert_eq!(s.context_of("resp_sim-3").unwrap().tokens, 35);
        for unknown in ["resp_sim-9", "resp_other-2", "", "resp_sim-x"] {
            let body: serde_json::Value =
                serde_json::from_str(&s.context_of(unknown).unwrap_err()).unwrap();
            assert_eq!(body["error"]["code"], "previous_response_not_found");
        }
        // Over the per-response cap: not stored.
        s.commit(pending(4, 996), 5);
        assert!(s.context_of("resp_sim-4").is_err());
        let mut out = String::new();
        s.render(&mut out);
        assert!(
            out.contains("infermeter_sim_response_store_entries 2\n"),
            "{out}"
        );
        assert!(
            out.contains("infermeter_sim_responses_evicted_total 1\n"),
            "{out}"
        );
        assert!(
            out.contains("infermeter_sim_responses_not_stored_total 1\n"),
            "{out}"
        );
        assert!(
            out.contains("infermeter_sim_previous_response_hits_total 2\n"),
            "{out}"
        );
        assert!(
            out.contains("infermeter_sim_previous_response_tokens_total 50\n"),
            "{out}"
        );
    }

    #[test]
    fn a_continued_context_hashes_as_the_conversation_resent() {
        let block = 4;
        let s = ResponseStore::new(10, 1_000, Some(block));
        let prompt: Vec<u32> = (1..=10).collect();
        let p = Pending {
            store: Arc::new(ResponseStore::new(0, 0, None)),
            id: 7,
            context: Context::default().then(10, &prompt, Some(block)),
            tool: None,
        };
        s.commit(p, 6);
        let next: Vec<u32> = vec![90, 91, 92];
        let continued = s
            .context_of("resp_sim-7")
            .unwrap()
            .then(3, &next, Some(block));
        let ids = words::word_ids();
        let mut whole = prompt.clone();
        whole.extend((0..6).map(|i| ids[words::word_index(7, i)]));
        whole.extend(&next);
        assert_eq!(continued.tokens, 19);
        assert_eq!(
            continued.chain.unwrap().blocks,
            super::super::tokens::block_hashes(&whole, block)
        );
    }
}
