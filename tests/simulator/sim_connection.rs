//! `close-after-stream` over a raw TCP connection: the streamed response arrives whole with
//! llama-server's keep-alive headers, then the server closes the connection, and a second
//! request on it (sent after the close, or pipelined behind the stream) gets no answer.

use std::time::Duration;

use crate::support::sim::{instant, start, traces};
use infermeter_core::sim::SimConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn request(stream: bool) -> String {
    let body =
        format!(r#"{{"prompt":"hello there","max_tokens":3,"ignore_eos":true,"stream":{stream}}}"#);
    format!(
        "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Reads until `done` holds for what was read, end-of-file, or a reset; returns the bytes and
/// whether the connection ended (EOF or reset) rather than `done` being met.
async fn read_until(tcp: &mut TcpStream, done: impl Fn(&str) -> bool) -> (String, bool) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let read = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf))
            .await
            .expect("the server neither answered nor closed within 10 s");
        match read {
            Ok(0) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return (String::from_utf8_lossy(&got).into_owned(), true);
            }
            Err(e) => panic!("read failed: {e}"),
        }
        let text = String::from_utf8_lossy(&got);
        if done(&text) {
            return (text.into_owned(), false);
        }
    }
}

fn stream_complete(text: &str) -> bool {
    text.ends_with("0\r\n\r\n")
}

fn closing() -> SimConfig {
    SimConfig {
        close_after_stream: true,
        ..instant()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_closes_after_a_stream_despite_keep_alive_headers() {
    let (sim, mut trace) = start(closing()).await;
    let mut tcp = TcpStream::connect(sim.addr()).await.unwrap();
    tcp.write_all(request(true).as_bytes()).await.unwrap();
    let (first, ended) = read_until(&mut tcp, stream_complete).await;
    assert!(!ended, "closed before the response was complete: {first:?}");
    let head = first.split("\r\n\r\n").next().unwrap().to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("\r\nconnection: keep-alive"), "{head}");
    assert!(
        head.contains("\r\nkeep-alive: timeout=5, max=100"),
        "{head}"
    );
    assert!(head.contains("\r\ntransfer-encoding: chunked"), "{head}");
    assert!(first.contains("data: [DONE]"), "{first}");
    // The close follows the complete response.
    let (rest, ended) = read_until(&mut tcp, |_| false).await;
    assert!(ended && rest.is_empty(), "{rest:?}");
    // A client reusing the connection gets nothing back: EOF or a reset.
    let _ = tcp.write_all(request(false).as_bytes()).await;
    let (answer, ended) = read_until(&mut tcp, |_| false).await;
    assert!(ended && answer.is_empty(), "{answer:?}");
    assert_eq!(traces(&mut trace, 1).await.len(), 1);
    assert!(trace.try_recv().is_err(), "the second request was served");
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_pipelined_behind_a_stream_is_never_answered() {
    let (sim, mut trace) = start(closing()).await;
    let mut tcp = TcpStream::connect(sim.addr()).await.unwrap();
    let both = format!("{}{}", request(true), request(false));
    tcp.write_all(both.as_bytes()).await.unwrap();
    let (got, ended) = read_until(&mut tcp, |_| false).await;
    assert!(ended);
    assert_eq!(got.matches("HTTP/1.1 ").count(), 1, "{got}");
    assert!(
        got.contains("data: [DONE]") && stream_complete(&got),
        "{got}"
    );
    assert_eq!(traces(&mut trace, 1).await.len(), 1);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        trace.try_recv().is_err(),
        "the pipelined request was served"
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streamed_responses_and_the_default_keep_the_connection() {
    for config in [closing(), instant()] {
        let advertised = config.close_after_stream;
        let (sim, _trace) = start(config).await;
        let mut tcp = TcpStream::connect(sim.addr()).await.unwrap();
        // Non-streamed twice (kept open either way), then with the default also streams.
        let kinds: &[bool] = if advertised {
            &[false, false]
        } else {
            &[true, true, false]
        };
        for &stream in kinds {
            tcp.write_all(request(stream).as_bytes()).await.unwrap();
            let (got, ended) = read_until(&mut tcp, |t| {
                if stream {
                    stream_complete(t)
                } else {
                    t.ends_with('}')
                }
            })
            .await;
            assert!(!ended, "{got}");
            let head = got.to_ascii_lowercase();
            assert!(head.starts_with("http/1.1 200"), "{got}");
            assert!(head.contains("\r\nserver: infermeter-sim/"), "{got}");
            assert_eq!(head.contains("keep-alive: timeout=5"), advertised, "{got}");
        }
        sim.shutdown().await.unwrap();
    }
}
