//! A misbehaving OpenAI-compatible server for tests: it listens on 127.0.0.1 and misbehaves in
//! one [`Misbehaviour`] at a time (accepts and never answers, answers the model list but stalls
//! chat, sends headers and then nothing…), counting what it was asked.
//!
//! Plain threads and blocking sockets rather than tokio: every misbehaviour is "block here",
//! a stalled connection's thread ends when the client hangs up (its read sees end of file), and
//! the test binaries need no runtime of their own to use it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// How the server misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehaviour {
    /// Accepts every connection and never answers anything.
    Silent,
    /// Answers `GET /v1/models`; every other request is read and never answered.
    StallChat,
    /// Answers the first `GET /v1/models` only (the model lookup); every later request (the
    /// pool warm-up's) is read and never answered.
    ModelsOnce,
    /// Answers `GET /v1/models`; a chat request gets `200` and SSE headers, then nothing.
    HeadersThenNothing,
}

/// The server; stops accepting when dropped (open connections stay stalled until the client
/// hangs up).
pub struct BadServer {
    /// `http://127.0.0.1:PORT/v1`
    pub base_url: String,
    counts: Arc<Counts>,
    stop: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
}

#[derive(Default)]
struct Counts {
    connections: AtomicUsize,
    models: AtomicUsize,
    chat: AtomicUsize,
}

impl BadServer {
    pub fn start(mode: Misbehaviour) -> BadServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let counts = Arc::new(Counts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (counts.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                c.connections.fetch_add(1, Ordering::SeqCst);
                let c = c.clone();
                std::thread::spawn(move || serve(conn, mode, &c));
            }
        });
        BadServer {
            base_url: format!("http://{addr}/v1"),
            counts,
            stop,
            addr,
        }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.counts.connections.load(Ordering::SeqCst)
    }

    /// `GET …/models` requests read so far (answered or not).
    pub fn model_requests(&self) -> usize {
        self.counts.models.load(Ordering::SeqCst)
    }

    /// Requests other than the model list read so far (chat or completions).
    pub fn chat_requests(&self) -> usize {
        self.counts.chat.load(Ordering::SeqCst)
    }
}

impl Drop for BadServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Serves one connection: request after request (keep-alive) until it misbehaves.
fn serve(conn: TcpStream, mode: Misbehaviour, counts: &Counts) {
    let mut reader = BufReader::new(match conn.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    });
    let mut out = conn;
    if mode == Misbehaviour::Silent {
        return hold(&mut reader);
    }
    loop {
        let Some((method, path)) = read_request(&mut reader) else {
            return;
        };
        let path = path.split('?').next().unwrap_or_default();
        if method == "GET" && path.ends_with("/models") {
            let n = counts.models.fetch_add(1, Ordering::SeqCst);
            if mode == Misbehaviour::ModelsOnce && n > 0 {
                return hold(&mut reader);
            }
            let body = r#"{"object":"list","data":[{"id":"bad-model","object":"model"}]}"#;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            if out.write_all(head.as_bytes()).is_err() || out.write_all(body.as_bytes()).is_err() {
                return;
            }
            continue;
        }
        if method == "GET" {
            // The server's self-description (`/version`, `/props`…), asked for the
            // provenance: never answered, and not a chat request.
            return hold(&mut reader);
        }
        if !path.starts_with("/v1/") {
            // The server-root endpoints a run may ask (`/tokenize` at the preflight): not
            // offered, as on a server without them.
            let head = "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
            if out.write_all(head.as_bytes()).is_err() {
                return;
            }
            continue;
        }
        counts.chat.fetch_add(1, Ordering::SeqCst);
        if mode == Misbehaviour::HeadersThenNothing {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                        transfer-encoding: chunked\r\n\r\n";
            if out.write_all(head.as_bytes()).is_err() {
                return;
            }
            let _ = out.flush();
        }
        return hold(&mut reader);
    }
}

/// Keeps the connection open, answering nothing, until the client hangs up.
fn hold(reader: &mut BufReader<TcpStream>) {
    let mut sink = [0u8; 4096];
    while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
    let _ = reader.get_ref().shutdown(Shutdown::Both);
}

/// Reads one request's head and body; its method and path, `None` at end of file.
pub fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(String, String)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some((method, path))
}
