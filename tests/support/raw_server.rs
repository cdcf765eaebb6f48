//! A hostile HTTP/1.1 server for the client's tests: it answers `GET …/models` properly and
//! every other request (the generation `POST`s) with whatever bytes the test's closure writes,
//! byte for byte, and counts what it was sent: connections, `POST`s, and on which connection
//! each came.
//!
//! Plain threads and blocking sockets, as in `bad_server.rs`: a thread per connection that
//! ends when the client hangs up or the closure says to close.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What the closure does with the connection after its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Reads the next request on it.
    KeepAlive,
    /// Closes it at once (unread bytes make that a reset).
    Close,
    /// Closes its sending side and reads until the client hangs up (a lingering close: the
    /// answer arrives, however much of the request was left unread).
    Linger,
    /// Reads nothing more and keeps it open for a minute (the client's buffers fill: its
    /// write blocks).
    Hold,
}

/// One generation request, as the closure sees it.
pub struct Post<'a> {
    /// Which `POST` this is, counted from 1 over the server's life.
    pub n: usize,
    /// Which connection it came on, counted from 1 in the order they were accepted.
    pub connection: usize,
    /// Requests (of any kind) this connection carried before this one.
    pub earlier_on_connection: usize,
    /// The body's announced length; it has not been read.
    pub body_len: usize,
    /// The request line (`POST /v1/chat/completions HTTP/1.1`).
    pub line: String,
    /// The whole head, request line and headers.
    head: String,
    conn: &'a mut TcpStream,
}

impl Post<'_> {
    /// The value of header `name` (any case), when the request has it.
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }

    /// Reads the body (the rest of `body_len`); `false` if the client hung up first.
    pub fn read_body(&mut self) -> bool {
        let mut sink = vec![0u8; self.body_len];
        self.conn.read_exact(&mut sink).is_ok()
    }

    /// Reads the body and returns it as text (lossily).
    pub fn body(&mut self) -> String {
        let mut body = vec![0u8; self.body_len];
        let _ = self.conn.read_exact(&mut body);
        String::from_utf8_lossy(&body).into_owned()
    }

    /// The path the request was sent to (`/v1/chat/completions`).
    pub fn path(&self) -> &str {
        self.line.split(' ').nth(1).unwrap_or("")
    }

    /// Writes a whole `200` JSON answer with keep-alive.
    pub fn json(&mut self, body: &str) -> After {
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if self.write(head.as_bytes()) && self.write(body.as_bytes()) {
            After::KeepAlive
        } else {
            After::Close
        }
    }

    /// Reads the first `n` bytes of the body.
    pub fn read_some(&mut self, n: usize) {
        let mut sink = vec![0u8; n.min(self.body_len)];
        let _ = self.conn.read_exact(&mut sink);
    }

    /// Writes `bytes` (and flushes them): `false` if the client is gone.
    pub fn write(&mut self, bytes: &[u8]) -> bool {
        self.conn.write_all(bytes).is_ok() && self.conn.flush().is_ok()
    }
}

/// The server; stops accepting when dropped.
pub struct RawServer {
    /// `http://127.0.0.1:PORT/v1`
    pub base_url: String,
    counts: Arc<Counts>,
    stop: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
}

#[derive(Default)]
struct Counts {
    connections: AtomicUsize,
    posts: AtomicUsize,
    /// For each `POST` in order: how many requests its connection carried before it.
    earlier: Mutex<Vec<usize>>,
}

type Answer = dyn Fn(&mut Post<'_>) -> After + Send + Sync;

impl RawServer {
    /// Answers `GET …/models` with keep-alive when `models_keep_alive`, else closes after it
    /// (so that every `POST` comes on a fresh connection), and every `POST` under `/v1/` with
    /// `answer`; a `POST` to the server's root (`/tokenize`, asked at the preflight) gets a
    /// 404, as from a server without it, and is not counted.
    pub fn start(
        models_keep_alive: bool,
        answer: impl Fn(&mut Post<'_>) -> After + Send + Sync + 'static,
    ) -> RawServer {
        RawServer::start_with(models_keep_alive, false, answer)
    }

    /// Like [`start`](Self::start), but every `POST`, the server root's endpoints
    /// (`/tokenize`, `/reset_prefix_cache`) too, goes to `answer` (and is counted).
    pub fn engine(answer: impl Fn(&mut Post<'_>) -> After + Send + Sync + 'static) -> RawServer {
        RawServer::start_with(true, true, answer)
    }

    fn start_with(
        models_keep_alive: bool,
        root_posts: bool,
        answer: impl Fn(&mut Post<'_>) -> After + Send + Sync + 'static,
    ) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let counts = Arc::new(Counts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let answer: Arc<Answer> = Arc::new(answer);
        let (c, s) = (counts.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let id = c.connections.fetch_add(1, Ordering::SeqCst) + 1;
                let (c, answer) = (c.clone(), answer.clone());
                let keep = (models_keep_alive, root_posts);
                std::thread::spawn(move || serve(conn, id, keep, &c, &*answer));
            }
        });
        RawServer {
            base_url: format!("http://{addr}/v1"),
            counts,
            stop,
            addr,
        }
    }

    /// The URL generation requests go to.
    pub fn chat_url(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    pub fn connections(&self) -> usize {
        self.counts.connections.load(Ordering::SeqCst)
    }

    /// `POST`s whose head was read.
    pub fn posts(&self) -> usize {
        self.counts.posts.load(Ordering::SeqCst)
    }

    /// For each `POST` in order, how many requests its connection had carried before it.
    pub fn earlier_on_connection(&self) -> Vec<usize> {
        self.counts.earlier.lock().unwrap().clone()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(
    mut conn: TcpStream,
    id: usize,
    (models_keep_alive, root_posts): (bool, bool),
    counts: &Counts,
    answer: &Answer,
) {
    let _ = conn.set_nodelay(true);
    let mut carried = 0;
    loop {
        let Some((line, body_len, head)) = read_head(&mut conn) else {
            return;
        };
        let earlier = carried;
        carried += 1;
        if line.starts_with("GET ") {
            let body = br#"{"object":"list","data":[{"id":"m","object":"model"}]}"#;
            let connection = if models_keep_alive {
                "keep-alive"
            } else {
                "close"
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: {connection}\r\n\r\n",
                body.len()
            );
            let sent = conn.write_all(head.as_bytes()).is_ok() && conn.write_all(body).is_ok();
            if !sent || !models_keep_alive {
                return;
            }
            continue;
        }
        if !root_posts && !line.split(' ').nth(1).unwrap_or("").starts_with("/v1/") {
            let mut sink = vec![0u8; body_len];
            let head = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
            if conn.read_exact(&mut sink).is_err() || conn.write_all(head).is_err() {
                return;
            }
            continue;
        }
        let n = counts.posts.fetch_add(1, Ordering::SeqCst) + 1;
        counts.earlier.lock().unwrap().push(earlier);
        let mut post = Post {
            n,
            connection: id,
            earlier_on_connection: earlier,
            body_len,
            line,
            head,
            conn: &mut conn,
        };
        match answer(&mut post) {
            After::KeepAlive => {}
            After::Close => return,
            After::Linger => {
                let _ = conn.shutdown(Shutdown::Write);
                return drain(&mut conn);
            }
            After::Hold => return std::thread::sleep(std::time::Duration::from_secs(60)),
        }
    }
}

/// Reads until the client hangs up.
fn drain(conn: &mut TcpStream) {
    let mut sink = [0u8; 64 * 1024];
    while matches!(conn.read(&mut sink), Ok(n) if n > 0) {}
}

/// Reads one request head byte by byte (nothing of the body): its request line and the body's
/// announced length, and the whole head.
fn read_head(conn: &mut TcpStream) -> Option<(String, usize, String)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if conn.read(&mut byte).ok()? == 0 || buf.len() > 64 * 1024 {
            return None;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let len = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
        })
        .unwrap_or(0);
    Some((head.lines().next().unwrap_or("").to_string(), len, head))
}

/// An SSE body of `chunks` content chunks saying `text`, usage, and `[DONE]`.
pub fn sse(text: &str, chunks: u32) -> String {
    let mut body = String::new();
    for _ in 0..chunks {
        body.push_str(&format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n"
        ));
    }
    body.push_str(&format!(
        "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":1,\"completion_tokens\":{chunks}}}}}\n\ndata: [DONE]\n\n"
    ));
    body
}

/// A whole `200` SSE response with a content-length and keep-alive.
pub fn ok_response(text: &str, chunks: u32) -> Vec<u8> {
    let body = sse(text, chunks);
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
