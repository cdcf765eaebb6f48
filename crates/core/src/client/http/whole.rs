//! A pooling API's request (embeddings, rerank, score), and a generation API's asked for its
//! whole answer (`stream #false`, in `generated.rs`): its answer is one JSON body, not a
//! stream. The body is read into the connection's event buffer by the same reads and bounds
//! as a stream (past `max_event_bytes` the request fails as `malformed`; the request's
//! `timeout` ends a body that drips or stalls), timed at its first byte (the response head)
//! and its end, and decoded whole by the API kind: how many results, and the server's prompt
//! count. An answer with no result is `empty`, one with more results than inputs sent, or
//! that is not the API's JSON (an HTML page, a truncated or mistyped body), `malformed`; a
//! body cut short is `stream_broken`; an error object with a success status is the server's
//! failure, `stream_broken` as an in-stream error is.

use std::time::Instant;

use bytes::Bytes;

use super::super::reqwest_errors::unusable;
use super::super::wire::{BodyError, Held, Response, Tag, Wire};
use super::{Client, DRAIN_WAIT, since};
use crate::metrics::{ErrorKind, RequestRecord, TokenSource};
use crate::protocol::{Pooled, WholeError};

/// How reading a whole answer ended.
pub(super) enum Read<T> {
    /// The request's timeout ran out.
    TimedOut,
    /// The request failed before an answer came (its error is in the record).
    Failed,
    /// The body, decoded.
    Answer(T),
}

impl<T> From<Option<T>> for Read<T> {
    fn from(answer: Option<T>) -> Read<T> {
        answer.map_or(Read::Failed, Read::Answer)
    }
}

impl Client {
    /// Sends one pooling request and fills `rec`: the whole-answer counterpart of
    /// `execute_text`.
    pub(super) async fn execute_whole(
        &self,
        body: Bytes,
        on: (Tag<'_>, Option<&mut Held>),
        rec: &mut RequestRecord,
        t0: Instant,
    ) {
        let (api, inputs) = (self.api, rec.inputs.max(1));
        let outcome = self
            .read_whole(body, on, rec, t0, |b| api.kind().decode_whole(b, inputs))
            .await;
        rec.output_tokens = 0;
        rec.token_source = TokenSource::Tokenizer;
        match outcome {
            Read::TimedOut => rec.error = Some(ErrorKind::Timeout),
            Read::Answer(answer) => self.judge_whole(rec, answer),
            Read::Failed => {}
        }
    }

    /// Sends `body`, reads the whole answer within the request's timeout and decodes it with
    /// `decode`; sets `done_ns` and gives the connection back.
    pub(super) async fn read_whole<T>(
        &self,
        body: Bytes,
        (tag, mut held): (Tag<'_>, Option<&mut Held>),
        rec: &mut RequestRecord,
        t0: Instant,
        decode: impl FnOnce(&[u8]) -> T,
    ) -> Read<T> {
        let (outcome, tail) = match &self.wire {
            Some(wire) => {
                let read =
                    self.whole_wire(wire, &body, (tag, held.as_deref_mut()), rec, t0, decode);
                match tokio::time::timeout(self.timeout, read).await {
                    Ok((answer, tail)) => (Read::from(answer), tail),
                    Err(_) => (Read::TimedOut, None),
                }
            }
            None => {
                let read = self.whole_reqwest(body, tag, rec, t0, decode);
                match tokio::time::timeout(self.timeout, read).await {
                    Ok(answer) => (Read::from(answer), None),
                    Err(_) => (Read::TimedOut, None),
                }
            }
        };
        rec.done_ns = since(t0);
        if let (Some(wire), Some(mut resp)) = (&self.wire, tail)
            && tokio::time::timeout(self.timeout.min(DRAIN_WAIT), resp.drain()).await == Ok(true)
        {
            resp.finish_to(wire, held);
        }
        outcome
    }

    /// What a decoded answer says about the request.
    fn judge_whole(&self, rec: &mut RequestRecord, answer: Result<Pooled, WholeError>) {
        let answer = match answer {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!("unreadable answer: {e}");
                rec.error = Some(match e {
                    WholeError::Server => ErrorKind::StreamBroken,
                    WholeError::Incomplete(_) => ErrorKind::Incomplete,
                    _ => ErrorKind::Malformed,
                });
                return;
            }
        };
        // Any other count is `Incomplete`, refused by the decoder.
        if answer.results == 0 {
            rec.error = Some(ErrorKind::Empty);
        }
        if let Some(u) = answer.usage {
            rec.token_source = TokenSource::Usage;
            self.check_prompt(rec, u.prompt_tokens, u.cached_tokens);
        }
    }

    /// Sends over this client's own connections and reads the whole body; the answer (`None`
    /// when the request failed before one) and the response, when its connection may be
    /// reused.
    async fn whole_wire<T>(
        &self,
        wire: &Wire,
        body: &[u8],
        on: (Tag<'_>, Option<&mut Held>),
        rec: &mut RequestRecord,
        t0: Instant,
        decode: impl FnOnce(&[u8]) -> T,
    ) -> (Option<T>, Option<Response>) {
        let Some(mut resp) = self.post_on(wire, body, on, rec, t0).await else {
            return (None, None);
        };
        rec.first_byte_ns = Some(since(t0));
        rec.status = Some(resp.status);
        rec.sim_id = resp.sim_id;
        if !(200..300).contains(&resp.status) {
            rec.error = Some(ErrorKind::Http(resp.status));
            return (None, Some(resp));
        }
        loop {
            match resp.fill().await {
                Ok(true) if resp.conn.events.pending().len() > self.max_event_bytes => {
                    rec.error = Some(ErrorKind::Malformed);
                    return (None, None);
                }
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    tracing::debug!("answer broken: {e}");
                    rec.error = Some(match e {
                        BodyError::Io(_) => ErrorKind::StreamBroken,
                        BodyError::Framing(_) => ErrorKind::Protocol,
                    });
                    return (None, None);
                }
            }
        }
        let answer = decode(resp.conn.events.pending());
        (Some(answer), Some(resp))
    }

    /// Like [`whole_wire`](Self::whole_wire), through reqwest (a proxied target).
    async fn whole_reqwest<T>(
        &self,
        body: Bytes,
        tag: Tag<'_>,
        rec: &mut RequestRecord,
        t0: Instant,
        decode: impl FnOnce(&[u8]) -> T,
    ) -> Option<T> {
        rec.sent_ns = since(t0);
        let mut resp = self.post_reqwest(body, tag, rec).await?;
        rec.first_byte_ns = Some(since(t0));
        let status = resp.status();
        rec.status = Some(status.as_u16());
        if !status.is_success() {
            rec.error = Some(ErrorKind::Http(status.as_u16()));
            return None;
        }
        let mut bytes = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) if bytes.len() + chunk.len() > self.max_event_bytes => {
                    rec.error = Some(ErrorKind::Malformed);
                    return None;
                }
                Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
                Ok(None) => return Some(decode(&bytes)),
                Err(e) => {
                    rec.error = Some(if e.is_timeout() {
                        ErrorKind::Timeout
                    } else if unusable(&e) {
                        ErrorKind::Protocol
                    } else {
                        ErrorKind::StreamBroken
                    });
                    return None;
                }
            }
        }
    }
}
