//! A server that answers correctly, in text chosen to hurt whoever shows it: its `server`
//! header and the model id it lists carry HTML, Markdown links and mentions, a table's `|`,
//! a spreadsheet formula, terminal escapes (ESC, BEL) and a GitHub workflow command on a
//! line of its own. Every chat request gets a short, well-formed SSE answer naming that
//! model, so a run against it measures normally and every output shows the text.

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};

use super::bad_server::read_request;

/// The model id the server lists first (a run that names no model uses it).
pub const HOSTILE_MODEL: &str = "<img src=x onerror=alert(1)>|x|@octocat [go](javascript:alert(1)) \
     \u{1b}]0;pwned\u{7}\u{1b}[2J\n::add-mask::x\n=HYPERLINK(\"http://evil\")\u{fffe}";

/// The `server` header (a header value holds no line break nor ESC: what HTTP allows).
pub const HOSTILE_SERVER: &str = "<script>alert(1)</script> @octocat |x| [a](javascript:b)";

/// The server; stops accepting when dropped.
pub struct HostileServer {
    /// `http://127.0.0.1:PORT/v1`
    pub base_url: String,
}

impl HostileServer {
    pub fn start() -> HostileServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                std::thread::spawn(move || serve(conn));
            }
        });
        HostileServer {
            base_url: format!("http://{addr}/v1"),
        }
    }
}

/// One request per connection, answered and closed.
fn serve(conn: TcpStream) {
    let Ok(read) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read);
    let mut out = conn;
    let Some((method, path)) = read_request(&mut reader) else {
        return;
    };
    let model = serde_json::to_string(HOSTILE_MODEL).expect("a string");
    let (kind, body) =
        if method == "GET" && path.split('?').next().unwrap_or("").ends_with("/models") {
            (
                "application/json",
                format!(r#"{{"object":"list","data":[{{"id":{model},"object":"model"}}]}}"#),
            )
        } else if method == "GET" {
            let head = "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
            let _ = out.write_all(head.as_bytes());
            return;
        } else {
            let chunk = |delta: &str| {
                format!(
                    "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":{model},\
                 \"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
                )
            };
            let mut sse = chunk(r#"{"role":"assistant","content":""}"#);
            for _ in 0..4 {
                sse.push_str(&chunk(r#"{"content":"tok "}"#));
            }
            sse.push_str(&format!(
                "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":{model},\
             \"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"length\"}}],\
             \"usage\":{{\"prompt_tokens\":16,\"completion_tokens\":4,\"total_tokens\":20}}}}\n\n\
             data: [DONE]\n\n"
            ));
            ("text/event-stream", sse)
        };
    let head = format!(
        "HTTP/1.1 200 OK\r\nserver: {HOSTILE_SERVER}\r\ncontent-type: {kind}\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(body.as_bytes());
    let _ = out.flush();
}
