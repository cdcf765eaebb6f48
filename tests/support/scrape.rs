//! `GET /metrics` of a simulator (or any Prometheus text endpoint) read by hand, for tests that
//! check what the server counted: one plain HTTP/1.1 request, the samples by name.

use std::collections::BTreeMap;
use std::io::{Read, Write};

/// The text of `GET /metrics` at the server of `base_url` (`http://host:port/v1`).
pub fn metrics_text(base_url: &str) -> String {
    let authority = base_url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default();
    let mut s = std::net::TcpStream::connect(authority).expect("the server listens");
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\n\r\n"
    )
    .expect("the request is written");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("the answer is read");
    text
}

/// The samples of `GET /metrics` whose names start with `prefix`, by name (labels included,
/// as written); lines that are not `NAME VALUE` are left out.
pub fn metrics(base_url: &str, prefix: &str) -> BTreeMap<String, f64> {
    metrics_text(base_url)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

/// The sample `name` of `GET /metrics`; panics (showing what was there) when it is absent.
pub fn metric(base_url: &str, name: &str) -> f64 {
    let all = metrics(base_url, name);
    *all.get(name)
        .unwrap_or_else(|| panic!("{name} in {all:?} of {}", metrics_text(base_url)))
}
