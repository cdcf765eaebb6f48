//! Pointing a base URL at the proxy: the upstream `host:port` the proxy connects to, and the
//! same URL with the proxy's loopback address in its place (scheme, credentials and path
//! kept as written, so every path the run joins to it is unchanged).

use std::net::SocketAddr;

/// An http base URL split around its host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxiedUrl {
    /// What the proxy connects to: `host:port` (port 80 when the URL has none).
    pub upstream: String,
    /// `http://` and any `user:password@`.
    before: String,
    /// The path, query and fragment, as written.
    after: String,
}

impl ProxiedUrl {
    /// The URL with `addr` (the proxy) for its host and port.
    pub fn via(&self, addr: SocketAddr) -> String {
        format!("{}{addr}{}", self.before, self.after)
    }
}

/// `url` split for the proxy; `None` unless it is a plain `http://` URL with a host.
pub fn through(url: &str) -> Option<ProxiedUrl> {
    let scheme = url.get(..7).filter(|s| s.eq_ignore_ascii_case("http://"))?;
    let rest = &url[scheme.len()..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(end);
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(at) => authority.split_at(at + 1),
        None => ("", authority),
    };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let close = v6.find(']')?;
        let port = v6[close + 1..].strip_prefix(':');
        (&hostport[..close + 2], port)
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        None | Some("") => 80,
        Some(p) => p.parse::<u16>().ok()?,
    };
    Some(ProxiedUrl {
        upstream: format!("{host}:{port}"),
        before: format!("{scheme}{userinfo}"),
        after: after.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_keeps_all_but_its_host_and_port() {
        let proxy: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let cases = [
            (
                "http://10.0.0.5:8000/v1",
                "10.0.0.5:8000",
                "http://127.0.0.1:4000/v1",
            ),
            (
                "http://gateway/v1",
                "gateway:80",
                "http://127.0.0.1:4000/v1",
            ),
            (
                "http://u:p@host:81/v1?x=1",
                "host:81",
                "http://u:p@127.0.0.1:4000/v1?x=1",
            ),
            (
                "http://[::1]:9000/v1",
                "[::1]:9000",
                "http://127.0.0.1:4000/v1",
            ),
            ("HTTP://h:1", "h:1", "HTTP://127.0.0.1:4000"),
        ];
        for (url, upstream, via) in cases {
            let p = through(url).unwrap_or_else(|| panic!("{url}"));
            assert_eq!(p.upstream, upstream, "{url}");
            assert_eq!(p.via(proxy), via, "{url}");
        }
    }

    #[test]
    fn only_plain_http_urls_with_a_host_go_through() {
        for url in [
            "https://h/v1",
            "sim",
            "http:///v1",
            "http://h:99999/v1",
            "http://[::1/v1",
        ] {
            assert!(through(url).is_none(), "{url}");
        }
    }
}
