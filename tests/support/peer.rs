//! The two sides of a distributed run, written for tests that attack the other: a raw HTTP/1.1
//! caller ([`call`], [`call_endless`]) that posts what it likes to a real coordinator (no
//! token, a wrong one, bodies that never end), and a [`FakeCoordinator`] that answers a real
//! shard however the test says (garbage starts, a start a day away, silence, verdicts of
//! another run).
//!
//! Plain threads and blocking sockets, like `bad_server.rs`: every connection is closed after
//! one exchange (`Connection: close`), which every client handles.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the fake coordinator read it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query: `/v1/results?shard=0&instance=…`.
    pub path: String,
    pub authorization: Option<String>,
    pub body: Vec<u8>,
}

/// What the caller got back.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

/// `METHOD path` to `addr` with `body`, the token as a bearer when given; the whole answer.
pub fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &[u8],
) -> Answer {
    let mut s = TcpStream::connect(addr).expect("connect to the coordinator");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let head = head(method, path, token, Some(body.len() as u64));
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    read_answer(&mut s)
}

/// Like [`call`], but the head alone: it announces `declared` bytes and sends none.
pub fn call_declaring(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    declared: u64,
) -> Answer {
    let mut s = TcpStream::connect(addr).expect("connect to the coordinator");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(head(method, path, token, Some(declared)).as_bytes())
        .unwrap();
    read_answer(&mut s)
}

/// POSTs a chunked body that never ends, until the coordinator stops taking it (closes or
/// resets the connection) or `limit` bytes have gone; how many bytes it took.
pub fn call_endless(addr: SocketAddr, path: &str, token: Option<&str>, limit: u64) -> u64 {
    let mut s = TcpStream::connect(addr).expect("connect to the coordinator");
    s.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(head("POST", path, token, None).as_bytes())
        .unwrap();
    let chunk = vec![b'['; 1 << 20];
    let framed = [
        format!("{:x}\r\n", chunk.len()).into_bytes(),
        chunk,
        b"\r\n".to_vec(),
    ]
    .concat();
    let mut sent = 0u64;
    while sent < limit {
        match s.write_all(&framed) {
            Ok(()) => sent += framed.len() as u64,
            Err(_) => break,
        }
    }
    sent
}

fn head(method: &str, path: &str, token: Option<&str>, length: Option<u64>) -> String {
    let mut h = format!("{method} {path} HTTP/1.1\r\nHost: coordinator\r\nConnection: close\r\n");
    if let Some(t) = token {
        h.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    match length {
        Some(n) => h.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {n}\r\n"
        )),
        None => h.push_str("Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"),
    }
    h.push_str("\r\n");
    h
}

fn read_answer(s: &mut TcpStream) -> Answer {
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Answer { status, body }
}

/// How the fake coordinator answers one request: a status and a body (JSON or not); `None`
/// to hold the request forever (a silent coordinator).
pub type Handler = dyn Fn(&Request) -> Option<(u16, String)> + Send + Sync;

/// A coordinator written for a test: every request is recorded and answered by the handler.
pub struct FakeCoordinator {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl FakeCoordinator {
    pub fn start(
        handler: impl Fn(&Request) -> Option<(u16, String)> + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let seen = requests.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (handler, seen) = (handler.clone(), seen.clone());
                std::thread::spawn(move || serve(conn, &*handler, &seen));
            }
        });
        FakeCoordinator { addr, requests }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(conn: TcpStream, handler: &Handler, seen: &Mutex<Vec<Request>>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    let (mut length, mut authorization) = (0usize, None);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        let (name, value) = h.split_once(':').unwrap_or((&h, ""));
        let value = value.trim().to_string();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse().unwrap_or(0),
            "authorization" => authorization = Some(value),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let req = Request {
        method,
        path,
        authorization,
        body,
    };
    seen.lock().unwrap().push(req.clone());
    let Some((status, text)) = handler(&req) else {
        // Silent: hold the connection until the caller hangs up.
        let _ = reader.read_to_end(&mut Vec::new());
        return;
    };
    let mut conn = conn;
    let answer = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = conn.write_all(answer.as_bytes());
}
