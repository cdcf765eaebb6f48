//! Ground truth: one [`TraceRecord`] per finished request, written as JSON lines by a
//! background task (so the scheduler never waits on I/O) and/or handed to an in-process
//! receiver.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::faults::Fault;
use crate::protocol::Api;

/// How a request ended, from the server's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every token was handed to the connection.
    Completed,
    /// The client went away first (its connection or stream was dropped).
    Cancelled,
    /// The stream-cut fault closed the connection.
    Cut,
    /// An error-status fault answered it before any token.
    Rejected,
}

/// What the simulator did with one request. Times are µs since the simulator started
/// ([`super::SimHandle::started_at`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRecord {
    /// The id also sent in the `x-infermeter-sim-id` response header.
    pub id: u64,
    /// The API it came in on.
    pub endpoint: Api,
    pub stream: bool,
    /// When the request body had been received.
    pub arrival_us: u64,
    /// When it joined the running batch (absent if it never did).
    pub admitted_us: Option<u64>,
    /// When its first token was handed to the connection.
    pub first_token_us: Option<u64>,
    /// When the simulator was done with it.
    pub finished_us: u64,
    /// Emit time of every token.
    pub token_us: Vec<u64>,
    /// Number of running sequences in the step that emitted each token.
    pub batch_sizes: Vec<u32>,
    pub prompt_tokens: u64,
    /// Prompt tokens served from the prefix cache (`prefix-cache`); left out when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    pub completion_tokens: u64,
    /// The effective `max_tokens` (the request's, or `default-max-tokens`).
    pub max_tokens: u64,
    pub fault: Fault,
    pub outcome: Outcome,
    /// The request's W3C trace context (`traceparent`), when it carried one and the
    /// simulator exports spans (`otlp-traces-endpoint`).
    #[serde(skip)]
    pub trace: Option<crate::protocol::TraceContext>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Where trace records go. Both may be set.
#[derive(Debug, Default, Clone)]
pub struct TraceOptions {
    /// Append JSON lines to this file (created or truncated).
    pub file: Option<PathBuf>,
    /// Keep records for [`super::SimHandle::take_trace`].
    pub record: bool,
}

/// The sending side given to the server and scheduler, the writer task (if a file is written),
/// and the in-process receiver (if asked).
pub(crate) type TraceParts = (
    Option<mpsc::UnboundedSender<TraceRecord>>,
    Option<JoinHandle<std::io::Result<()>>>,
    Option<mpsc::UnboundedReceiver<TraceRecord>>,
);

pub(crate) async fn setup(options: &TraceOptions) -> std::io::Result<TraceParts> {
    let (forward, receiver) = if options.record {
        let (tx, rx) = mpsc::unbounded_channel();
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let Some(path) = &options.file else {
        return Ok((forward, None, receiver));
    };
    let file = tokio::fs::File::create(path).await?;
    let (tx, rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_lines(file, rx, forward));
    Ok((Some(tx), Some(writer), receiver))
}

async fn write_lines(
    file: tokio::fs::File,
    mut rx: mpsc::UnboundedReceiver<TraceRecord>,
    forward: Option<mpsc::UnboundedSender<TraceRecord>>,
) -> std::io::Result<()> {
    let mut out = tokio::io::BufWriter::new(file);
    let mut line = Vec::with_capacity(1024);
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(record) = next {
            line.clear();
            serde_json::to_writer(&mut line, &record).map_err(std::io::Error::other)?;
            line.push(b'\n');
            out.write_all(&line).await?;
            if let Some(f) = &forward {
                let _ = f.send(record);
            }
            next = rx.try_recv().ok();
        }
        // Flush whenever the queue runs dry so the file is current while the server runs.
        out.flush().await?;
    }
    out.flush().await
}
