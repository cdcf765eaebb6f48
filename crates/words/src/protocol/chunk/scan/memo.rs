//! What the scanner remembers of one stream's chunks ([`ChunkMemo`]), so that the bytes every
//! chunk of a stream repeats are validated once, not once per chunk.
//!
//! Both shortcuts rest on one fact: the scanner is a function of the bytes, reading each
//! token to its end and nothing past it, and no answer depends on where in the text a token
//! lies. So a chunk that repeats bytes an earlier chunk was scanned over, in the same place
//! in the grammar, is scanned to the same answer without reading them again.

use super::super::info::{ChunkInfo, FinishReason, ServerTimings, Usage};
use super::{Text, scan_from};

/// The most bytes of a chunk's opening remembered.
const PREFIX_MAX: usize = 192;
/// The most bytes of a chunk's shape (all but its answer's text) remembered.
const SHAPE_MAX: usize = 320;

/// What the scanner remembers of a stream's last chunks; kept by the client for one stream
/// (inline: no allocation).
///
/// - **The opening**: a chunk's bytes up to the key of the first field the scanner reads
///   (`choices`, `usage`, `error`, `timings`), an OpenAI chunk's `id`, `object`, `created`
///   and `model`. The scanner validated them and read nothing from them, and what it does up
///   to that key depends on those bytes alone (each token before it ends before it, and the
///   key's quote is checked again where the scan resumes): a chunk that begins with the same
///   bytes is scanned from that key.
/// - **The shape**: a chunk whose answer text was the only string read from it, with that
///   text cut out: the bytes up to the answer's opening quote, and from its closing quote to
///   the end. A chunk that has the same bytes around a valid string is the same chunk with
///   another answer: the scan reads the same tokens in the same order up to that string,
///   and the same after it (a string's bytes decide only where it ends, which the comparison
///   after it checks, and its own value). Its answer is that string, and everything else
///   (finish reason, usage, timings, error) what the remembered chunk said. The usual
///   content chunk costs two comparisons and one string's scan.
///
/// Anything else is scanned whole; a chunk the scanner is unsure of still goes to
/// serde_json.
pub struct ChunkMemo {
    prefix: [u8; PREFIX_MAX],
    /// How many of `prefix` hold the opening (0: none yet).
    prefix_len: u8,
    shape: [u8; SHAPE_MAX],
    /// `shape[..hole]` is the chunk up to and with the answer's opening quote; `shape[hole..
    /// shape_len]` from its closing quote on (0: none yet).
    hole: u16,
    shape_len: u16,
    /// What the shape's chunk said besides its answer.
    finish_reason: Option<FinishReason>,
    usage: Option<Usage>,
    timings: Option<ServerTimings>,
    error: bool,
}

impl Default for ChunkMemo {
    fn default() -> Self {
        ChunkMemo {
            prefix: [0; PREFIX_MAX],
            prefix_len: 0,
            shape: [0; SHAPE_MAX],
            hole: 0,
            shape_len: 0,
            finish_reason: None,
            usage: None,
            timings: None,
            error: false,
        }
    }
}

impl ChunkMemo {
    /// How many bytes of opening it holds (0: none yet).
    pub fn prefix_len(&self) -> usize {
        usize::from(self.prefix_len)
    }

    /// Whether it holds a chunk's shape.
    pub fn has_shape(&self) -> bool {
        self.shape_len > 0
    }

    /// `data` read as the remembered shape with another answer, when it is one.
    fn reuse<'a>(&self, data: &'a str, info: &mut ChunkInfo<'a>) -> Option<()> {
        let (hole, len) = (usize::from(self.hole), usize::from(self.shape_len));
        if len == 0 {
            return None;
        }
        let bytes = data.as_bytes();
        if bytes.get(..hole)? != &self.shape[..hole] {
            return None;
        }
        // The string whose opening quote the shape ends with, then the shape's rest from its
        // closing quote on.
        let (answer, after) = Text(data).string(hole - 1)?;
        if bytes.get(after - 1..)? != &self.shape[hole..len] {
            return None;
        }
        info.answer = Some(answer);
        info.finish_reason = self.finish_reason;
        info.usage = self.usage;
        info.timings = self.timings;
        info.error = self.error;
        Some(())
    }

    /// Remembers `data`'s shape, when its answer is the only string read from it.
    fn remember_shape(&mut self, data: &str, info: &ChunkInfo<'_>) {
        self.shape_len = 0;
        let only_answer = info.reasoning.is_none()
            && info.tool_call.id.is_none()
            && info.tool_call.name.is_none()
            && info.tool_call.arguments.is_none()
            && info.more_tool_calls.is_empty()
            && info.response_id.is_none();
        let Some(answer) = info.answer.as_ref().and_then(|a| a.raw()) else {
            return;
        };
        // Where the answer lies in `data` (it is borrowed from it).
        let Some(start) = (answer.as_ptr() as usize).checked_sub(data.as_ptr() as usize) else {
            return;
        };
        let end = start + answer.len();
        let bytes = data.as_bytes();
        let rest = bytes.len().saturating_sub(end);
        if !only_answer
            || start == 0
            || bytes.get(start - 1) != Some(&b'"')
            || bytes.get(end) != Some(&b'"')
            || start + rest > SHAPE_MAX
        {
            return;
        }
        self.shape[..start].copy_from_slice(&bytes[..start]);
        self.shape[start..start + rest].copy_from_slice(&bytes[end..]);
        self.hole = start as u16;
        self.shape_len = (start + rest) as u16;
        self.finish_reason = info.finish_reason;
        self.usage = info.usage;
        self.timings = info.timings;
        self.error = info.error;
    }
}

/// [`super::scan`], with what `memo` remembers of the stream's earlier chunks (see
/// [`ChunkMemo`]); remembers what this chunk offers.
pub(crate) fn scan_with<'a>(
    data: &'a str,
    info: &mut ChunkInfo<'a>,
    memo: &mut ChunkMemo,
) -> Option<()> {
    if memo.reuse(data, info).is_some() {
        return Some(());
    }
    let n = usize::from(memo.prefix_len);
    if n > 0 && data.as_bytes().get(..n) == Some(&memo.prefix[..n]) {
        scan_from(data, info, Some(n))?;
    } else {
        let first = scan_from(data, info, None)?;
        if first > 0 && first <= PREFIX_MAX {
            memo.prefix[..first].copy_from_slice(&data.as_bytes()[..first]);
            memo.prefix_len = first as u8;
        }
    }
    memo.remember_shape(data, info);
    Some(())
}
