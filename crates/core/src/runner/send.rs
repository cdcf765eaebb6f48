//! The send path of one request: what every request task of a stage shares, building the
//! body (through the data set's `mutate` and `request` hooks when its script defines them),
//! sending it, checking the response with `validate`, and handing the record to the
//! collector. A failing hook marks its request as a `hook` error, a rejected response as
//! `invalid`; the run goes on either way.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use super::counters::{Begun, Cancel, Occupancy, Own};

use crate::client::{BodyTemplate, Held, Tag};
use crate::dataset::{
    Answer as QualityAnswer, DatasetSource, EncodedImage, ImageError, ItemPrompt, Prompt,
    PromptFactory, QualityCheck, Reference, Salt, render,
};
use crate::hooks::{HookCtx, HookError, Hooks};
use crate::metrics::{AnswerRow, ErrorKind, RequestRecord, answer_hash};
use crate::plan::{Plan, RequestRecipe, StagePlan};
use crate::protocol::{Answer, Inputs, Message, PromptRef, ToolCall, TraceContext};

/// Why a request's body could not be built (it is then recorded as a `hook` error).
#[derive(Debug, thiserror::Error)]
pub(super) enum BodyError {
    #[error(transparent)]
    Hook(#[from] HookError),
    #[error("the `request` hook needs the body as JSON")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Image(#[from] ImageError),
}

/// A request's body, its input token count, the `max_tokens` it asks for (a `request` hook
/// may change it), and the images it carries.
pub(super) type Body = Result<(Bytes, u32, u32, Media), BodyError>;

/// The images one request carries: how many, their pixels and encoded bytes.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Media {
    images: u32,
    pixels: u64,
    bytes: u64,
}

/// What every request task of one stage shares.
pub(super) struct StageShared {
    pub(super) plan: Arc<Plan>,
    pub(super) stage: StagePlan,
    /// The target's URLs and the route over them.
    pub(super) router: Arc<super::route::Router>,
    pub(super) template: Arc<BodyTemplate>,
    /// The templates of the stage's models and classes (see `labels.rs`).
    pub(super) variants: Arc<super::labels::Variants>,
    pub(super) factory: Arc<PromptFactory>,
    /// The stage's data set's hooks, compiled once for the run.
    pub(super) hooks: Option<Arc<Hooks>>,
    /// The stage's data set's `quality` checks, compiled once for the stage; `None` (and no
    /// work per answer) when it has none.
    pub(super) quality: Option<Arc<QualityCheck>>,
    /// `answers.jsonl`: each judged answer's row (see `metrics::AnswerRow`).
    pub(super) answers: Option<Arc<super::answers::AnswerSink>>,
    /// The baseline's answers by prompt, for `agreement`.
    pub(super) agree_with: Option<Arc<crate::metrics::AnswerIndex>>,
    /// The answers kept for the data set's LLM judge, judged once the stage has ended.
    pub(super) judge: Option<Arc<super::judge::JudgePool>>,
    pub(super) t0: Instant,
    pub(super) tx: std::sync::mpsc::Sender<RequestRecord>,
    /// Stops sending (Ctrl-C, or a warm-up's rule holding).
    pub(super) interrupt: CancellationToken,
    /// Cancels in-flight requests (drain time over, or interrupt grace over); this shard's.
    pub(super) cancel: Arc<Cancel>,
    /// Requests in flight now (on this shard), on a line of their own; the most there were at
    /// once and a closed loop's idle time (this shard's: see `counters.rs`).
    pub(super) in_flight: Own<AtomicU64>,
    pub(super) occupancy: Arc<Occupancy>,
    /// Requests begun, each of which sends one record: an `until-decided` stage's look counts
    /// those whose record it has not folded yet as still to come. This shard's counter is
    /// `started.slot(shard)`.
    pub(super) started: Arc<Begun>,
    /// This stage's shard (`--cpus`), 0 without shards.
    pub(super) shard: usize,
    /// `cache-salt`: this stage round's salt, put in front of every prompt.
    pub(super) salt: Option<Salt>,
    /// See `RunOptions::test_send_lag`.
    pub(super) test_send_lag: std::time::Duration,
    /// The run's trace-id part and this stage round's number, when requests carry a
    /// `traceparent`.
    pub(super) trace: Option<(u64, u16)>,
}

/// Nanoseconds since `t0`.
pub(super) fn since(t0: Instant) -> u64 {
    Instant::now().saturating_duration_since(t0).as_nanos() as u64
}

impl StageShared {
    /// The body template of a request: its model's and class's, else the stage's.
    fn template_of(&self, recipe: &RequestRecipe) -> &BodyTemplate {
        self.variants.of(recipe.labels).unwrap_or(&self.template)
    }

    /// The body of a plain request: its recipe's prompt, through the hooks.
    pub(super) fn body(&self, recipe: &RequestRecipe) -> Body {
        if let Answer::Pooled(inputs) = self.template.api.kind().answer() {
            let (bytes, input, max) = self.pooled_body(recipe, inputs);
            return Ok((bytes, input, max, Media::default()));
        }
        let prompt = self
            .factory
            .prompt(recipe.dataset, recipe.input_tokens, recipe.item);
        self.body_for(recipe, prompt)
    }

    /// A pooling request's body (its texts: the target's `batch` of them, after a query for
    /// pairs), the prompt tokens a server counts for them, and no output (the plan refuses
    /// hooks on a pooling API). Each text takes the round's salt, so no cache serves a rerun.
    fn pooled_body(&self, recipe: &RequestRecipe, inputs: Inputs) -> (Bytes, u32, u32) {
        let n = inputs.texts(self.plan.target.request.batch);
        let drawn = self
            .factory
            .texts(recipe.dataset, recipe.input_tokens, recipe.item, n);
        let mut texts = Vec::with_capacity(drawn.len());
        let mut lengths = Vec::with_capacity(drawn.len());
        for (text, len) in drawn {
            let (prompt, len) = self.salted(Prompt::Text(text), len);
            texts.push(match prompt {
                Prompt::Text(t) => t,
                other => other.as_text().to_string(),
            });
            lengths.push(len);
        }
        let (first, rest) = texts
            .split_first()
            .map_or(("", &[][..]), |(f, r)| (f.as_str(), r));
        let extra = self.factory.item_extra(recipe.dataset, recipe.item);
        let bytes = self
            .template_of(recipe)
            .build_batch(PromptRef::Text(first), rest, 0, extra);
        (bytes, inputs.served_tokens(&lengths), 0)
    }

    /// The inputs one request carries: the target's `batch` for a pooling API, none for a
    /// generation API.
    fn inputs(&self) -> u32 {
        match self.template.api.kind().answer() {
            Answer::Pooled(_) => self.plan.target.request.batch.max(1),
            Answer::Stream | Answer::Whole => 0,
        }
    }

    /// The prompt with this round's salt in front, and its input count with the salt's tokens.
    fn salted(&self, prompt: Prompt, input: u32) -> (Prompt, u32) {
        match &self.salt {
            Some(salt) => {
                let (p, added) = self.factory.salted(salt, prompt);
                (p, input.saturating_add(added))
            }
            None => (prompt, input),
        }
    }

    /// The body for a prompt built elsewhere (a session's turn), through the hooks.
    pub(super) fn body_for(&self, recipe: &RequestRecipe, prompt: Prompt) -> Body {
        self.body_salted(recipe, prompt, true)
    }

    /// [`body_for`](Self::body_for), with this round's salt in front of the prompt or not (a
    /// later turn of a session the server keeps: its first turn's salt is in the server's
    /// copy already).
    pub(super) fn body_salted(&self, recipe: &RequestRecipe, prompt: Prompt, salt: bool) -> Body {
        let salted = |prompt: Prompt, input: u32| {
            if salt {
                self.salted(prompt, input)
            } else {
                (prompt, input)
            }
        };
        let extra = self.factory.item_extra(recipe.dataset, recipe.item);
        let images = self.images(recipe)?;
        let media = Media {
            images: images.len() as u32,
            // Saturating: a header's pixels are bounded, but a sum must never wrap.
            pixels: images.iter().fold(0, |n, i| n.saturating_add(i.pixels)),
            bytes: images.iter().fold(0, |n, i| n.saturating_add(i.bytes)),
        };
        let urls: Vec<&str> = images.iter().map(|i| i.data_uri.as_str()).collect();
        let Some(h) = self.hooks.as_deref() else {
            let (prompt, input) = salted(prompt, recipe.input_tokens);
            let bytes = build(
                self.template_of(recipe),
                &prompt,
                recipe.output_tokens,
                extra,
                &urls,
            );
            return Ok((bytes, input, recipe.output_tokens, media));
        };
        let c = self.hook_ctx(recipe);
        let mut input = recipe.input_tokens;
        let prompt = if h.has_mutate {
            let p = h.mutate(prompt, &c)?;
            // A mutated prompt is counted again, so the server's usage is compared with it.
            let t = self.factory.tokenizer();
            input = match &p {
                Prompt::Text(text) => t.count(text),
                Prompt::Messages(ms) => ms.iter().map(|m| t.count(&m.content)).sum(),
            }
            .min(u32::MAX as usize) as u32;
            p
        } else {
            prompt
        };
        // After `mutate`, so the script sees the data set's prompt.
        let (prompt, input) = salted(prompt, input);
        let bytes = build(
            self.template_of(recipe),
            &prompt,
            recipe.output_tokens,
            extra,
            &urls,
        );
        if !h.has_request {
            return Ok((bytes, input, recipe.output_tokens, media));
        }
        let value: serde_json::Value = serde_json::from_slice(&bytes)?;
        let value = h.request(value, &c)?;
        // What the server is asked for is what its answer is checked against.
        let max_tokens = ["max_tokens", "max_completion_tokens"]
            .iter()
            .find_map(|k| value.get(*k).and_then(serde_json::Value::as_u64))
            .map_or(recipe.output_tokens, |n| n.min(u64::from(u32::MAX)) as u32);
        Ok((
            Bytes::from(serde_json::to_vec(&value)?),
            input,
            max_tokens,
            media,
        ))
    }

    /// The request's images: its data set item's own (JSONL `images`, read at load), then
    /// the data set's synthetic ones, drawn from the stage's seed and the request's index (so
    /// a rerun sends the same bytes) and encoded now, off the hot path.
    fn images(&self, recipe: &RequestRecipe) -> Result<Vec<EncodedImage>, ImageError> {
        let Some(d) = self.plan.datasets.get(recipe.dataset) else {
            return Ok(Vec::new());
        };
        let mut out: Vec<EncodedImage> = match &d.source {
            DatasetSource::Items { items, .. } => items
                .get(recipe.item as usize)
                .map(|it| &it.images[..])
                .unwrap_or_default()
                .iter()
                .map(|i| EncodedImage {
                    data_uri: i.url.clone(),
                    bytes: i.bytes,
                    pixels: i.pixels,
                })
                .collect(),
            _ => Vec::new(),
        };
        if let Some(spec) = &d.images {
            let seed = self.stage.seed ^ recipe.index.wrapping_mul(0x2545_F491_4F6C_DD1D);
            for draw in spec.draw(seed) {
                out.push(render(&draw)?);
            }
        }
        Ok(out)
    }

    fn hook_ctx(&self, recipe: &RequestRecipe) -> HookCtx<'_> {
        HookCtx {
            index: recipe.index,
            stage: &self.stage.name,
            item: recipe.item,
            input_tokens: recipe.input_tokens,
            output_tokens: recipe.output_tokens,
            // Same request, same draws: mutated prompts are as deterministic as the plan.
            seed: self.stage.seed ^ recipe.index.wrapping_mul(0xA076_1D64_78BD_642F),
        }
    }

    /// Runs `validate` on a successful response, after the data set's `quality` checks.
    fn validate(&self, recipe: &RequestRecipe, text: &str, rec: &mut RequestRecord) {
        self.check_quality(recipe, text, rec);
        let Some(h) = self.hooks.as_deref().filter(|h| h.has_validate) else {
            return;
        };
        if !rec.ok() {
            return;
        }
        match h.validate(text, &self.hook_ctx(recipe)) {
            Ok(None) => {}
            Ok(Some(why)) => {
                tracing::debug!(index = recipe.index, "invalid response: {why}");
                rec.error = Some(ErrorKind::Invalid);
            }
            Err(e) => {
                tracing::debug!(index = recipe.index, "{e}");
                rec.error = Some(ErrorKind::Hook);
            }
        }
    }

    /// Marks what the data set's `quality` block finds in a successful answer, read whole:
    /// its text past the reasoning before it, against its record's reference.
    fn check_quality(&self, recipe: &RequestRecipe, text: &str, rec: &mut RequestRecord) {
        let Some(q) = self.quality.as_deref() else {
            return;
        };
        if !rec.ok() {
            return;
        }
        let answered = rec.first_answer_ns.is_some() || rec.answered == Some(true);
        let answer = if answered {
            text.get(rec.answer_at as usize..).unwrap_or(text)
        } else {
            ""
        };
        let seen = QualityAnswer {
            text: answer,
            output_tokens: rec.output_tokens,
            max_tokens: rec.planned_output_tokens,
            stopped_at_length: rec.finish_reason == Some(crate::protocol::FinishReason::Length),
        };
        let mut mark = q.check(&seen, self.reference(recipe));
        let key = (recipe.index, rec.turn, recipe.item);
        // Kept where it was judged, once per whole answer, for `compare`'s pairing by prompt.
        let row = self
            .answers
            .as_ref()
            .map(|_| AnswerRow::new(&self.stage.name, key, answer, mark.correct));
        if let Some(base) = &self.agree_with {
            let hash = row
                .as_ref()
                .map_or_else(|| answer_hash(answer), |r| r.hash.clone());
            mark.agrees = base.agrees(&self.stage.name, key, &hash);
        }
        rec.quality = Some(mark);
        if let (Some(sink), Some(row)) = (&self.answers, &row) {
            sink.keep(row);
        }
        if let Some(pool) = &self.judge {
            let reference = self.reference(recipe).map(|r| r.answers.join("\n"));
            let prompt = self.prompt_text(recipe).unwrap_or_default();
            let at = (recipe.index, recipe.labels);
            pool.offer(at, prompt, answer, reference.as_deref());
        }
    }

    /// The text of the request's data set item for the judge: a prompt, or a conversation's
    /// last user message.
    fn prompt_text(&self, recipe: &RequestRecipe) -> Option<&str> {
        let DatasetSource::Items { items, .. } = &self.plan.datasets.get(recipe.dataset)?.source
        else {
            return None;
        };
        match &items.get(recipe.item as usize)?.prompt {
            ItemPrompt::Text(t) => Some(t),
            ItemPrompt::Messages(ms) => ms
                .iter()
                .rev()
                .find(|m| m.role == "user")
                .map(|m| m.content.as_str()),
        }
    }

    /// The reference of the request's data set item, when it has one.
    fn reference(&self, recipe: &RequestRecipe) -> Option<&Reference> {
        match &self.plan.datasets.get(recipe.dataset)?.source {
            DatasetSource::Items { items, .. } => {
                items.get(recipe.item as usize)?.reference.as_deref()
            }
            _ => None,
        }
    }

    /// Waits out a session's think time; false when the stage stops first.
    pub(super) async fn pause(&self, think: std::time::Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(think) => true,
            _ = self.cancel.cancelled() => false,
            _ = self.interrupt.cancelled() => false,
        }
    }

    /// Sends one request (turn `turn` of a session, 0 for a plain request) and records it;
    /// the response text when it succeeded.
    pub(super) async fn send(
        &self,
        body: Body,
        recipe: RequestRecipe,
        scheduled_ns: u64,
        turn: u32,
    ) -> Option<String> {
        self.send_full(
            body,
            recipe,
            (scheduled_ns, turn, turn),
            (None, false),
            |_| {},
        )
        .await
        .map(|(text, _)| text)
    }

    /// Like [`send`](Self::send), for a closed loop's client, which keeps its own idle time:
    /// when the request went on the wire and when its answer was read (`sent_ns`, `done_ns`;
    /// the scheduled instant for one that never went out).
    pub(super) async fn send_timed(
        &self,
        body: Body,
        recipe: RequestRecipe,
        scheduled_ns: u64,
    ) -> (u64, u64) {
        let mut at = (scheduled_ns, scheduled_ns);
        self.send_full(body, recipe, (scheduled_ns, 0, 0), (None, false), |r| {
            at = (r.sent_ns.max(scheduled_ns), r.done_ns.max(r.sent_ns));
        })
        .await;
        at
    }

    /// A session turn, like [`send`](Self::send), on the session's own connection to the URL
    /// the request is routed to, when `held` (one per URL, see [`super::route::Router::held`])
    /// is given; marked a tool-result turn when `tool_result`. The reply's text and the tool
    /// calls it held (kept only when `next`: a later turn can answer them).
    pub(super) async fn send_turn(
        &self,
        body: Body,
        recipe: RequestRecipe,
        at: (u64, u32),
        (held, tool_result, next): (Option<&mut [Held]>, bool, bool),
    ) -> Option<(String, Vec<ToolCall>)> {
        self.send_full(body, recipe, (at.0, at.1, at.1), (held, next), |r| {
            r.tool_result = tool_result;
        })
        .await
    }

    /// A session turn on its `held` connections, like [`send_turn`](Self::send_turn) (the
    /// calls kept when `next`), with `finish` given the record just before it goes to the
    /// collector (a turn of a session the server keeps takes its response's id and calls).
    pub(super) async fn send_held_then(
        &self,
        body: Body,
        recipe: RequestRecipe,
        at: (u64, u32),
        (held, next): (Option<&mut [Held]>, bool),
        finish: impl FnOnce(&mut RequestRecord),
    ) -> Option<String> {
        self.send_full(body, recipe, (at.0, at.1, at.1), (held, next), finish)
            .await
            .map(|(text, _)| text)
    }

    /// [`send`](Self::send), with `finish` given the record just before it goes to the
    /// collector (an agentic task's last turn adds the task's completion time). `turn` is
    /// (the turn in its own session, the turn's position in its agentic task): the second is
    /// what its trace id carries, so a subagent's turn `k` and its root's do not share one.
    pub(super) async fn send_then(
        &self,
        body: Body,
        recipe: RequestRecipe,
        scheduled_ns: u64,
        (turn, position): (u32, u32),
        finish: impl FnOnce(&mut RequestRecord),
    ) -> Option<String> {
        self.send_full(
            body,
            recipe,
            (scheduled_ns, turn, position),
            (None, false),
            finish,
        )
        .await
        .map(|(text, _)| text)
    }

    /// The one sending path behind [`send`](Self::send), [`send_turn`](Self::send_turn) and
    /// [`send_then`](Self::send_then); `trace_turn` is the turn number the trace id carries
    /// (the session turn, but for an agentic task's turns: their position in the task). The
    /// answer's tool calls are kept (`keep_calls`) only for a session turn whose next turn can
    /// answer them: a plain request keeps none.
    async fn send_full(
        &self,
        body: Body,
        recipe: RequestRecipe,
        (scheduled_ns, turn, trace_turn): (u64, u32, u32),
        (held, keep_calls): (Option<&mut [Held]>, bool),
        finish: impl FnOnce(&mut RequestRecord),
    ) -> Option<(String, Vec<ToolCall>)> {
        self.started
            .slot(self.shard)
            .fetch_add(1, Ordering::Relaxed);
        let mut rec = RequestRecord {
            index: recipe.index,
            turn,
            messages: 2 * turn + 1,
            scheduled_ns,
            input_tokens: recipe.input_tokens,
            planned_input_tokens: recipe.input_tokens,
            planned_output_tokens: recipe.output_tokens,
            inputs: self.inputs(),
            trace: self.trace.map(|(run, stage)| {
                TraceContext::for_request(run, stage, trace_turn, recipe.index)
            }),
            labels: recipe.labels,
            keep_tool_calls: keep_calls,
            ..RequestRecord::default()
        };
        let pick = self.router.pick(&self.stage, recipe.index, turn);
        rec.url = pick.url;
        let body = match body {
            Ok((b, input_tokens, max_tokens, media)) => {
                rec.input_tokens = input_tokens;
                rec.planned_input_tokens = input_tokens;
                rec.planned_output_tokens = max_tokens;
                rec.request_bytes = b.len() as u64;
                rec.images = media.images;
                rec.image_pixels = media.pixels;
                rec.image_bytes = media.bytes;
                b
            }
            Err(why) => {
                tracing::debug!(index = recipe.index, "{why}");
                rec.error = Some(ErrorKind::Hook);
                rec.sent_ns = scheduled_ns;
                rec.done_ns = since(self.t0);
                finish(&mut rec);
                let _ = self.tx.send(rec);
                return None;
            }
        };
        let tag = Tag {
            affinity: pick.affinity.as_deref(),
            priority: self.variants.header_priority(recipe.labels),
        };
        let client = &pick.route.client;
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.occupancy.peak.fetch_max(now, Ordering::Relaxed);
        let reply = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => None,
            text = client.execute_tagged(
                body,
                (tag, held.and_then(|h| h.get_mut(usize::from(pick.url.unwrap_or(0))))),
                recipe.output_tokens,
                &mut rec,
                self.t0,
            ) => {
                self.validate(&recipe, &text, &mut rec);
                Some(text)
            }
        };
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        if reply.is_none() {
            rec.error = Some(ErrorKind::Cancelled);
            rec.done_ns = since(self.t0);
            if rec.sent_ns == 0 {
                rec.sent_ns = scheduled_ns;
            }
        }
        finish(&mut rec);
        let ok = rec.ok();
        let calls = std::mem::take(&mut rec.tool_calls);
        // The collector outlives every task of its stage; a failed send means it is gone already.
        let _ = self.tx.send(rec);
        reply.filter(|_| ok).map(|text| (text, calls))
    }
}

/// The body of one request. `extra`, when given, is merged over the template's fields
/// (without copying the template).
fn build(
    template: &BodyTemplate,
    prompt: &Prompt,
    max_tokens: u32,
    extra: Option<&BTreeMap<String, serde_json::Value>>,
    images: &[&str],
) -> Bytes {
    match prompt {
        Prompt::Text(text) => template.build_with(PromptRef::Text(text), max_tokens, extra, images),
        Prompt::Messages(ms) => {
            let msgs: Vec<Message<'_>> = ms
                .iter()
                .map(|m| Message {
                    role: &m.role,
                    content: &m.content,
                    tool: m.tool.as_ref(),
                })
                .collect();
            template.build_with(PromptRef::Messages(&msgs), max_tokens, extra, images)
        }
    }
}
