//! The plain-HTTP/1.1 path: a small keep-alive pool of tokio `TcpStream`s, a request written
//! in one `write` (its head rendered once per run, only `content-length` per request), the
//! response head parsed by `httparse`, and the body's framing decoded straight into the SSE
//! decoder's buffer. No task per connection, no channel between the socket and the request,
//! no URL parsed per request: the request task itself reads its socket.
//!
//! https targets, and any target an HTTP proxy variable applies to, go through reqwest
//! instead (see `http.rs`); this path exists because reqwest and hyper's per-request and
//! per-chunk plumbing was most of the client's own cost.

use std::io;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::framing::{BadFraming, Framing};
use super::sse::Events;

/// A response head larger than this is not an answer we can use.
const MAX_HEAD: usize = 64 * 1024;
/// A read's room in the raw buffer.
const READ: usize = 16 * 1024;
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
}

/// Why a request got no usable response.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("connect: {0}")]
    Connect(#[source] io::Error),
    #[error("connect timed out")]
    ConnectTimeout,
    /// The connection closed (or failed) before a single byte of the response: the request
    /// provably never reached the server's handler.
    #[error("the connection closed before any response: {0}")]
    NotAnswered(#[source] io::Error),
    #[error("bad response: {0}")]
    Bad(#[source] io::Error),
}

/// A response whose head has been read.
pub struct Response {
    pub conn: Conn,
    pub status: u16,
    pub sim_id: Option<u64>,
    framing: Framing,
    keep_alive: bool,
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
    /// `None` when `url` is not plain `http://` without credentials.
    pub fn new(
        url: &str,
        headers: &[(String, String)],
        max_idle: usize,
        connect_timeout: Duration,
    ) -> Option<Self> {
        let parsed = url::Url::parse(url).ok()?;
        if parsed.scheme() != "http" || !parsed.username().is_empty() || parsed.password().is_some()
        {
            return None;
        }
        let host = match parsed.host()? {
            url::Host::Ipv6(a) => format!("[{a}]"),
            h => h.to_string(),
        };
        let port = parsed.port_or_known_default()?;
        let authority = format!("{host}:{port}");
        let host_header = match parsed.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.clone(),
        };
        let mut path = parsed.path().to_string();
        if let Some(q) = parsed.query() {
            path.push('?');
            path.push_str(q);
        }
        let mut common = Vec::new();
        common.extend_from_slice(b" HTTP/1.1\r\nhost: ");
        common.extend_from_slice(host_header.as_bytes());
        common.extend_from_slice(b"\r\naccept: */*\r\n");
        for (name, value) in headers {
            common.extend_from_slice(name.as_bytes());
            common.extend_from_slice(b": ");
            common.extend_from_slice(value.as_bytes());
            common.extend_from_slice(b"\r\n");
        }
        let mut post_head = b"POST ".to_vec();
        post_head.extend_from_slice(path.as_bytes());
        post_head.extend_from_slice(&common);
        post_head.extend_from_slice(b"content-type: application/json\r\ncontent-length: ");
        Some(Wire {
            authority,
            post_head,
            idle: Mutex::new(Vec::new()),
            max_idle: max_idle.max(1),
            connect_timeout,
            common,
        })
    }

    /// The path (and query) of `url` when it is on this target's host and port.
    pub fn same_origin_path(&self, url: &str) -> Option<String> {
        let u = url::Url::parse(url).ok()?;
        let host = match u.host()? {
            url::Host::Ipv6(a) => format!("[{a}]"),
            h => h.to_string(),
        };
        if u.scheme() != "http"
            || format!("{host}:{}", u.port_or_known_default()?) != self.authority
        {
            return None;
        }
        Some(match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_string(),
        })
    }

    fn take_idle(&self) -> Option<Conn> {
        self.idle.lock().ok()?.pop()
    }

    /// Puts a connection whose last response was read to its end back in the pool.
    pub fn give_back(&self, conn: Conn) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < self.max_idle
        {
            idle.push(conn);
        }
    }

    async fn connect(&self, max_event: usize) -> Result<Conn, SendError> {
        let stream =
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(&self.authority))
                .await
            {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => return Err(SendError::Connect(e)),
                Err(_) => return Err(SendError::ConnectTimeout),
            };
        let _ = stream.set_nodelay(true);
        Ok(Conn {
            stream,
            raw: Vec::with_capacity(READ),
            pos: 0,
            out: Vec::new(),
            events: Events::new(max_event),
        })
    }

    /// Posts `body` and reads the response head, on a pooled connection when there is one.
    /// A request that provably never reached the server is sent once more on a fresh
    /// connection; `retried` says so.
    pub async fn post(
        &self,
        body: &[u8],
        max_event: usize,
        retried: &mut bool,
    ) -> Result<Response, SendError> {
        let conn = match self.take_idle() {
            Some(c) => c,
            None => self.connect(max_event).await?,
        };
        match self.exchange(conn, body, None).await {
            Err(SendError::NotAnswered(e)) => {
                tracing::debug!("retrying on a fresh connection: {e}");
                *retried = true;
                let conn = self.connect(max_event).await?;
                match self.exchange(conn, body, None).await {
                    Err(SendError::NotAnswered(e)) => Err(SendError::Bad(e)),
                    r => r,
                }
            }
            r => r,
        }
    }

    /// Writes a request (a `POST` of `body`, or a `GET` of `get`) and reads its head.
    async fn exchange(
        &self,
        mut conn: Conn,
        body: &[u8],
        get: Option<&str>,
    ) -> Result<Response, SendError> {
        conn.out.clear();
        // A long prompt is written after the head rather than copied behind it: the write
        // buffer stays a read's size on every pooled connection.
        let separate = body.len() > READ;
        match get {
            None => {
                conn.out.extend_from_slice(&self.post_head);
                conn.out
                    .extend_from_slice(decimal(body.len(), &mut [0; 20]));
                conn.out.extend_from_slice(b"\r\n\r\n");
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
        if let Err(e) = conn.stream.write_all(&conn.out).await {
            return Err(SendError::NotAnswered(e));
        }
        if separate && let Err(e) = conn.stream.write_all(body).await {
            return Err(SendError::NotAnswered(e));
        }
        read_head(conn).await
    }

    /// Readies `n` connections, each asked for the model list and read to its end: idle ones
    /// from an earlier stage first (one the server has closed since is replaced), then new
    /// ones. The stage's requests then open none and meet no stale one.
    pub async fn warm(&self, path: &str, n: usize, max_event: usize) {
        let gets = (0..n).map(|_| async move {
            let mut resp = match self.take_idle() {
                Some(idle) => match self.exchange(idle, &[], Some(path)).await {
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
        self.exchange(conn, &[], Some(path)).await.ok()
    }
}

/// `n` in decimal, without an allocation.
fn decimal(mut n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// Reads and parses the response head (skipping `1xx` interim responses).
async fn read_head(mut conn: Conn) -> Result<Response, SendError> {
    conn.raw.clear();
    conn.pos = 0;
    let mut got_any = false;
    loop {
        if conn.raw.len() >= MAX_HEAD {
            return Err(bad("response head too large"));
        }
        conn.raw.reserve(READ);
        let n = match conn.stream.read_buf(&mut conn.raw).await {
            Ok(n) => n,
            Err(e) if !got_any => return Err(SendError::NotAnswered(e)),
            Err(e) => return Err(SendError::Bad(e)),
        };
        if n == 0 {
            let e = io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed");
            return Err(if got_any {
                SendError::Bad(e)
            } else {
                SendError::NotAnswered(e)
            });
        }
        got_any = true;
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut head = httparse::Response::new(&mut headers);
            let used = match head.parse(&conn.raw[conn.pos..]) {
                Ok(httparse::Status::Complete(used)) => used,
                Ok(httparse::Status::Partial) => break,
                Err(e) => return Err(bad(&e.to_string())),
            };
            let status = head.code.unwrap_or(0);
            if (100..200).contains(&status) && status != 101 {
                conn.pos += used;
                continue;
            }
            let mut framing = Framing::Close;
            let mut keep_alive = head.version == Some(1);
            let mut sim_id = None;
            let mut length = None;
            for h in head.headers.iter() {
                let name = h.name;
                if name.eq_ignore_ascii_case("transfer-encoding") {
                    if h.value
                        .windows(7)
                        .any(|w| w.eq_ignore_ascii_case(b"chunked"))
                    {
                        framing = Framing::chunked();
                    }
                } else if name.eq_ignore_ascii_case("content-length") {
                    length = std::str::from_utf8(h.value)
                        .ok()
                        .and_then(|v| v.trim().parse::<u64>().ok());
                    if length.is_none() {
                        return Err(bad("bad content-length"));
                    }
                } else if name.eq_ignore_ascii_case("connection") {
                    if h.value.windows(5).any(|w| w.eq_ignore_ascii_case(b"close")) {
                        keep_alive = false;
                    }
                } else if name.eq_ignore_ascii_case("x-infermeter-sim-id") {
                    sim_id = std::str::from_utf8(h.value)
                        .ok()
                        .and_then(|v| v.trim().parse().ok());
                }
            }
            if !matches!(framing, Framing::Chunked(_))
                && let Some(n) = length
            {
                framing = Framing::Length(n);
            }
            if status == 204 || status == 304 {
                framing = Framing::Length(0);
            }
            if framing == Framing::Close {
                keep_alive = false;
            }
            conn.pos += used;
            return Ok(Response {
                conn,
                status,
                sim_id,
                framing,
                keep_alive,
            });
        }
    }
}

fn bad(what: &str) -> SendError {
    SendError::Bad(io::Error::new(io::ErrorKind::InvalidData, what.to_string()))
}

impl Response {
    /// Decodes the next body bytes into `conn.events`; `false` once the body has ended.
    /// Waits for the network only when nothing undecoded is left.
    pub async fn fill(&mut self) -> Result<bool, BodyError> {
        if self.framing.is_done() {
            return Ok(false);
        }
        let c = &mut self.conn;
        if c.pos >= c.raw.len() {
            c.raw.clear();
            c.pos = 0;
            c.raw.reserve(READ);
            if c.stream.read_buf(&mut c.raw).await? == 0 {
                if self.framing == Framing::Close {
                    self.framing = Framing::Length(0);
                    self.keep_alive = false;
                    return Ok(false);
                }
                let cut = io::Error::new(io::ErrorKind::UnexpectedEof, "body cut short");
                return Err(cut.into());
            }
        }
        let used = self.framing.decode(&c.raw[c.pos..], c.events.spare())?;
        c.pos += used;
        if c.pos < c.raw.len() {
            // Bytes past the body's end: the connection cannot be reused.
            self.keep_alive = false;
            c.pos = c.raw.len();
        }
        Ok(true)
    }

    /// Reads the rest of the body, discarding it; `true` when it ended within bounds.
    pub async fn drain(&mut self) -> bool {
        let mut read = 0;
        loop {
            match self.fill().await {
                Ok(true) => {
                    read += self.conn.events.discard();
                    if read > MAX_DRAIN {
                        return false;
                    }
                }
                Ok(false) => {
                    self.conn.events.discard();
                    return true;
                }
                Err(_) => return false,
            }
        }
    }

    /// Returns the connection to the pool if its response was read to its end.
    pub fn finish(self, wire: &Wire) {
        if self.keep_alive && self.framing.is_done() && self.conn.pos >= self.conn.raw.len() {
            let mut conn = self.conn;
            conn.events.reset();
            if conn.raw.capacity() > 4 * READ {
                conn.raw = Vec::with_capacity(READ);
            }
            if conn.out.capacity() > 4 * READ {
                conn.out = Vec::new();
            }
            wire.give_back(conn);
        }
    }
}
