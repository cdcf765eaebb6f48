//! The target's request head, rendered once per run: the `POST` line up to
//! `content-length: `, the head after the path for `GET`s, and the optional affinity and
//! priority header names.

use std::sync::Mutex;
use std::time::Duration;

use super::Wire;

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
            affinity: None,
            priority: None,
        })
    }

    /// The same, sending each request's affinity id in header `name`.
    pub fn with_affinity(mut self, name: Option<&str>) -> Self {
        self.affinity = name.map(|n| format!("{n}: ").into_bytes());
        self
    }

    /// The same, sending each request's class priority in header `name`.
    pub fn with_priority(mut self, name: Option<&str>) -> Self {
        self.priority = name.map(|n| format!("{n}: ").into_bytes());
        self
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
}
