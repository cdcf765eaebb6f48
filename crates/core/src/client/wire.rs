//! The plain-HTTP/1.1 path: a small keep-alive pool of tokio `TcpStream`s, a request written
//! in one `write` (its head rendered once per run, only `content-length` per request), the
//! response head parsed by `head.rs`, and the body's framing decoded straight into the SSE
//! decoder's buffer. No task per connection, no channel between the socket and the request,
//! no URL parsed per request: the request task itself reads its socket.
//!
//! A connection goes back to the pool only when nothing about it is in doubt: its response
//! was framed and read exactly to its end (not an empty body, not one that ends at the close,
//! not `connection: close`), no byte followed it, the whole request had been written, and,
//! when it is taken again, nothing has arrived on it meanwhile and it has not been idle for
//! longer than [`POOL_IDLE_TIMEOUT`]. Anything else is closed: a byte the server sent too many
//! would otherwise be read as the next request's answer.
//!
//! https targets, and any target an HTTP proxy variable applies to, go through reqwest
//! instead (see `http.rs`); this path exists because reqwest and hyper's per-request and
//! per-chunk plumbing was most of the client's own cost.

use std::io;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use super::framing::{BadFraming, Framing};
use super::head::{self, BadHead};
use super::sse::Events;
use crate::protocol::TraceContext;

// `impl` blocks of the types below, each file for one concern. The hot free functions
// (`decimal`, `send`, `read_head`) stay here: codegen places a method with its type, wherever
// its `impl` is written, but a free function with its own module.
mod pool;
mod render;
mod response;

/// How long a pooled connection may sit idle before it is closed instead of reused: under the
/// 5 s after which uvicorn (vLLM, SGLang) and llama-server close an idle connection, so the
/// client lets go first rather than racing the server's close; httpx, under the OpenAI Python
/// SDK, keeps 5 s.
pub const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(4);
/// A read's room in the raw buffer.
const READ: usize = 16 * 1024;
/// Where a `traceparent` (`00-TRACEID-SPANID-01`) holds the trace id, which each request's
/// `x-request-id` repeats.
const TRACE_ID: std::ops::Range<usize> = 3..35;
/// Bytes read past `[DONE]` (or of an error body) before the connection is given up instead.
const MAX_DRAIN: usize = 256 * 1024;

/// Where requests go, rendered once.
pub struct Wire {
    /// `host:port`, for connecting.
    authority: String,
    /// The request head up to `content-length: ` (method, path, host, headers).
    post_head: Vec<u8>,
    /// The connection pool's idle connections, newest last.
    idle: Mutex<Vec<Conn>>,
    max_idle: usize,
    connect_timeout: Duration,
    /// The head after the request line's path: version, host, headers.
    common: Vec<u8>,
    /// `name: ` of the session-affinity header, when the target has one: written with each
    /// request's id after `content-length`.
    affinity: Option<Vec<u8>>,
    /// `name: ` of the priority header (`priority-as "header"`): written with each request's
    /// class priority, formatted on the stack.
    priority: Option<Vec<u8>>,
}

/// A session's own connection between its turns: a request given it is sent on it (when it
/// is still fit to reuse) before any pooled one, and its connection comes back here instead of
/// the pool, so a session's turns go on one connection as far as the server keeps it open.
#[derive(Default)]
pub struct Held {
    conn: Option<Conn>,
    /// The next request is the session's last: its connection goes back to the pool.
    last: bool,
}

/// What one request carries beyond its body and the target's headers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tag<'a> {
    /// The session-affinity id, sent in the target's affinity header (when it has one).
    pub affinity: Option<&'a str>,
    /// The request's class priority, sent in the target's priority header (when it has one).
    pub priority: Option<i64>,
}

/// One connection and its buffers, kept with it in the pool.
pub struct Conn {
    stream: TcpStream,
    /// Bytes read and not yet decoded.
    raw: Vec<u8>,
    /// Where the undecoded bytes in `raw` start.
    pos: usize,
    /// The request being written.
    out: Vec<u8>,
    /// The body's SSE decoder, reused from response to response.
    pub events: Events,
    /// When it last went back to the pool.
    idle_since: Instant,
}

/// Why a request got no usable response.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("connect: {0}")]
    Connect(#[source] io::Error),
    #[error("connect timed out")]
    ConnectTimeout,
    /// The connection closed (or failed) before a single byte of the response.
    #[error("the connection closed before any response: {0}")]
    NotAnswered(#[source] io::Error),
    /// The connection closed (or failed) inside the response head.
    #[error("the connection closed inside the response head: {0}")]
    Cut(#[source] io::Error),
    /// The server answered with what the client refuses to read.
    #[error("unusable response: {0}")]
    Protocol(#[from] BadHead),
}

/// A response whose head has been read.
pub struct Response {
    pub conn: Conn,
    pub status: u16,
    pub sim_id: Option<u64>,
    framing: Framing,
    /// The connection may be pooled once the body is read to its end.
    reusable: bool,
}

/// Why the body stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error(transparent)]
    Framing(#[from] BadFraming),
}

impl Wire {
    /// Posts `body` and reads the response head, on a pooled connection when there is one.
    /// When a pooled connection fails before any byte of an answer (the server closed it
    /// while it was idle, the race every keep-alive client meets), the request is sent once
    /// more on a fresh connection, and `retried` says so. A fresh connection's failure is
    /// final: the server may have received the request, and must not get it twice.
    pub async fn post(
        &self,
        body: &[u8],
        (tag, held): (Tag<'_>, Option<&mut Held>),
        trace: Option<&TraceContext>,
        max_event: usize,
        retried: &mut bool,
    ) -> Result<Response, SendError> {
        let own = held
            .and_then(|h| h.conn.take())
            .and_then(|mut c| c.fit().then_some(c));
        let (conn, reused) = match own.or_else(|| self.take_idle()) {
            Some(c) => (c, true),
            None => (self.connect(max_event).await?, false),
        };
        match self.exchange(conn, body, tag, trace, None).await {
            Err(SendError::NotAnswered(e)) if reused => {
                tracing::debug!("retrying on a fresh connection: {e}");
                *retried = true;
                let conn = self.connect(max_event).await?;
                self.exchange(conn, body, tag, trace, None).await
            }
            r => r,
        }
    }

    /// Writes a request (a `POST` of `body`, or a `GET` of `get`) and reads its head. An
    /// answer that comes before the request is written whole (a `413` before the body is
    /// read), or after writing failed, is read and returned; its connection is not reused.
    async fn exchange(
        &self,
        mut conn: Conn,
        body: &[u8],
        tag: Tag<'_>,
        trace: Option<&TraceContext>,
        get: Option<&str>,
    ) -> Result<Response, SendError> {
        conn.out.clear();
        conn.raw.clear();
        conn.pos = 0;
        // A long prompt is written after the head rather than copied behind it: the write
        // buffer stays a read's size on every pooled connection.
        let separate = body.len() > READ;
        match get {
            None => {
                conn.out.extend_from_slice(&self.post_head);
                conn.out
                    .extend_from_slice(decimal(body.len(), &mut [0; 20]));
                conn.out.extend_from_slice(b"\r\n");
                if let Some(t) = trace {
                    // Formatted on the stack: no allocation per request. The request id is
                    // the trace id, already written out inside the `traceparent`.
                    let parent = t.traceparent();
                    conn.out.extend_from_slice(b"traceparent: ");
                    conn.out.extend_from_slice(&parent);
                    conn.out.extend_from_slice(b"\r\nx-request-id: ");
                    conn.out.extend_from_slice(&parent[TRACE_ID]);
                    conn.out.extend_from_slice(b"\r\n");
                }
                if let (Some(name), Some(id)) = (&self.affinity, tag.affinity) {
                    conn.out.extend_from_slice(name);
                    conn.out.extend_from_slice(id.as_bytes());
                    conn.out.extend_from_slice(b"\r\n");
                }
                if let (Some(name), Some(p)) = (&self.priority, tag.priority) {
                    conn.out.extend_from_slice(name);
                    conn.out.extend_from_slice(signed(p, &mut [0; 20]));
                    conn.out.extend_from_slice(b"\r\n");
                }
                conn.out.extend_from_slice(b"\r\n");
                if !separate {
                    conn.out.extend_from_slice(body);
                }
            }
            Some(path) => {
                conn.out.extend_from_slice(b"GET ");
                conn.out.extend_from_slice(path.as_bytes());
                conn.out.extend_from_slice(&self.common);
                conn.out.extend_from_slice(b"\r\n");
            }
        }
        let mut whole = send(&conn.stream, &mut conn.raw, &conn.out).await;
        if separate && matches!(whole, Ok(true)) {
            whole = send(&conn.stream, &mut conn.raw, body).await;
        }
        if let Err(e) = &whole {
            // The server may have answered before it closed: what it said is read below.
            tracing::debug!("writing the request failed: {e}");
        }
        let mut resp = read_head(conn).await?;
        resp.reusable &= matches!(whole, Ok(true));
        Ok(resp)
    }

    /// Readies `n` connections, each asked for the model list and read to its end: idle ones
    /// from an earlier stage first (one the server has closed since is replaced), then new
    /// ones. The stage's requests then open none and meet no stale one.
    pub async fn warm(&self, path: &str, n: usize, max_event: usize) {
        let gets = (0..n).map(|_| async move {
            let mut resp = match self.take_idle() {
                Some(idle) => match self
                    .exchange(idle, &[], Tag::default(), None, Some(path))
                    .await
                {
                    Ok(r) => r,
                    Err(_) => self.warm_fresh(path, max_event).await?,
                },
                None => self.warm_fresh(path, max_event).await?,
            };
            if resp.drain().await {
                // Pooled at once: the warm-up may be cut short.
                resp.finish(self);
            }
            Some(())
        });
        futures_util::future::join_all(gets).await;
    }

    async fn warm_fresh(&self, path: &str, max_event: usize) -> Option<Response> {
        let conn = self.connect(max_event).await.ok()?;
        self.exchange(conn, &[], Tag::default(), None, Some(path))
            .await
            .ok()
    }
}

/// `n` in decimal, without an allocation.
fn decimal(n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let at = digits(n as u64, buf);
    &buf[at..]
}

/// `n` in decimal with its sign, without an allocation (an `i64` takes at most 20 bytes).
fn signed(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = digits(n.unsigned_abs(), buf);
    if n < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

/// Writes `n`'s digits at the end of `buf` (a `u64` has at most 20); where they start.
fn digits(mut n: u64, buf: &mut [u8; 20]) -> usize {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return at;
        }
    }
}

/// Writes `bytes`, watching for an answer that comes first: `Ok(true)` once all are written,
/// `Ok(false)` when the server's final answer (or its close, or a head the client refuses)
/// came before that and writing stopped; what it sent is in `raw`. Interim (`1xx`) answers
/// and a head still partial do not stop the write. The common case, a request the socket
/// takes at once, is one `write`.
async fn send(stream: &TcpStream, raw: &mut Vec<u8>, mut bytes: &[u8]) -> io::Result<bool> {
    while !bytes.is_empty() {
        match stream.try_write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let answered = tokio::select! {
                    biased;
                    r = stream.readable() => r.map(|()| true),
                    r = stream.writable() => r.map(|()| false),
                }?;
                if answered {
                    raw.reserve(READ);
                    match stream.try_read_buf(raw) {
                        Ok(0) => return Ok(false),
                        Ok(_) if !matches!(head::parse(raw), Ok(None)) => return Ok(false),
                        Ok(_) => {}
                        // Readiness the socket no longer has: keep writing.
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Reads the response head (skipping `1xx` interim responses) after what `raw` holds.
async fn read_head(mut conn: Conn) -> Result<Response, SendError> {
    loop {
        if !conn.raw.is_empty()
            && let Some(head) = head::parse(&conn.raw)?
        {
            conn.pos = head.len;
            return Ok(Response {
                conn,
                status: head.status,
                sim_id: head.sim_id,
                framing: head.framing,
                reusable: head.reusable(),
            });
        }
        conn.raw.reserve(READ);
        let e = match conn.stream.read_buf(&mut conn.raw).await {
            Ok(0) => io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"),
            Ok(_) => continue,
            Err(e) => e,
        };
        return Err(if conn.raw.is_empty() {
            SendError::NotAnswered(e)
        } else {
            SendError::Cut(e)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_id_is_the_trace_id_inside_the_traceparent() {
        for (run, index) in [(0, 0), (0x0123_4567_89ab_cdef, 42), (u64::MAX, u64::MAX)] {
            let t = TraceContext::for_request(run, 3, 1, index);
            assert_eq!(t.traceparent()[TRACE_ID], t.trace_hex());
        }
    }

    #[test]
    fn numbers_are_written_as_display_writes_them() {
        for n in [
            0,
            1,
            9,
            10,
            99,
            100,
            4096,
            usize::MAX / 10,
            usize::MAX - 1,
            usize::MAX,
        ] {
            assert_eq!(decimal(n, &mut [0; 20]), n.to_string().as_bytes(), "{n}");
        }
        let edges = [
            0,
            1,
            -1,
            9,
            -9,
            10,
            -10,
            255,
            -256,
            i64::MAX,
            i64::MIN + 1,
            i64::MIN,
        ];
        for n in edges {
            assert_eq!(signed(n, &mut [0; 20]), n.to_string().as_bytes(), "{n}");
        }
    }
}
