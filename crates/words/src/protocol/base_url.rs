//! What a URL given as a server's OpenAI-compatible API base means, and what it probably
//! meant when it is not one: `wait` and `run` read a URL, and suggest a fix for one, the same
//! way. A bare `http://host:port` (no path) is `…/v1` for `wait` ([`api_base`]), where every
//! OpenAI-compatible server serves its API; `run` takes a URL as given (a server may serve
//! its API at its root) and suggests `…/v1` only when the server answers 404 there.
//! [`likely_base`] is the suggestion both make: `http://` added to `host:port`, `/v1` to a
//! bare server, and an API's path (`/chat/completions`) taken off a URL that already ends in
//! it, since each request adds it again. [`join`] puts a path below a base (its query kept
//! last) and [`server_root`] is the server's own root below the API's `/v1`.

use super::api::Api;

/// The API base `url` means: a bare `http://host:port` (no path) is `http://host:port/v1`; a
/// URL with a path is itself (a trailing `/` and a fragment dropped, the query kept). `None`
/// when `url` is not an http(s) URL with a host.
pub fn api_base(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return None;
    }
    Some(if parsed.path().trim_matches('/').is_empty() {
        join(url, "/v1")
    } else {
        join(url, "")
    })
}

/// When `url` ends in a registered API's path (`http://h:8000/v1/chat/completions`, the
/// longest path winning): the API, and the base before its path (`http://h:8000/v1`, the
/// query kept).
pub fn api_path_in(url: &str) -> Option<(Api, String)> {
    let (head, query) = split_query(url);
    let (prefix, api) = Api::from_endpoint(head.trim_end_matches('/'))?;
    let base = match query.filter(|q| !q.is_empty()) {
        Some(q) => format!("{prefix}?{q}"),
        None => prefix.to_string(),
    };
    // What precedes the path must still be a server (`http://chat/completions` is a host).
    api_base(&base).map(|_| (api, base))
}

/// The API base that `url` probably meant, when it is not one as given: `host:port[/path]`
/// without a scheme is `http://…` (with `/v1` when bare); a URL that already ends in an API's
/// path is the part before it; a bare server is `…/v1`. `None` when there is no better guess
/// (a URL with a path of its own, or one that is not a URL at all).
pub fn likely_base(url: &str) -> Option<String> {
    let url = url.trim();
    if url.is_empty() {
        return None;
    }
    if !url.contains("://") {
        let with_scheme = format!("http://{url}");
        return likely_base(&with_scheme).or_else(|| api_base(&with_scheme));
    }
    if let Some((_, base)) = api_path_in(url) {
        return Some(base);
    }
    let parsed = url::Url::parse(url).ok()?;
    let bare = parsed.path().trim_matches('/').is_empty();
    (bare && api_base(url).is_some()).then(|| join(url, "/v1"))
}

/// `base` with `path` added to its path, its query string kept last:
/// `http://h/v1?api-version=2024-10-21` and `/chat/completions` give
/// `http://h/v1/chat/completions?api-version=2024-10-21` (Azure OpenAI passes its API version
/// so). A fragment is dropped: it never reaches a server.
pub fn join(base: &str, path: &str) -> String {
    let (head, query) = split_query(base);
    let mut url = format!("{}{path}", head.trim_end_matches('/'));
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        url.push('?');
        url.push_str(q);
    }
    url
}

/// The server's root: `base` without its query and the API's `/v1`, where vLLM, SGLang and
/// llama.cpp serve their own endpoints (`/tokenize`, `/metrics`, `/version`). Those are not
/// the OpenAI API, so the API's query (an `api-version`) is not theirs.
pub fn server_root(base: &str) -> String {
    let head = split_query(base).0.trim_end_matches('/');
    head.strip_suffix("/v1").unwrap_or(head).to_string()
}

/// (what precedes `?`, the query), the fragment dropped.
fn split_query(url: &str) -> (&str, Option<&str>) {
    let url = url.split_once('#').map_or(url, |(u, _)| u);
    match url.split_once('?') {
        Some((head, q)) => (head, Some(q)),
        None => (url, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_server_means_v1() {
        assert_eq!(
            api_base("http://127.0.0.1:8000").as_deref(),
            Some("http://127.0.0.1:8000/v1")
        );
        assert_eq!(
            api_base("https://h.example/openai/v1/").as_deref(),
            Some("https://h.example/openai/v1")
        );
        assert_eq!(api_base("127.0.0.1:8000"), None);
        assert_eq!(api_base("ftp://h/v1"), None);
    }

    #[test]
    fn an_api_path_is_found_at_the_end_only() {
        let (api, base) = api_path_in("http://h:8000/v1/chat/completions/").unwrap();
        assert_eq!((api, base.as_str()), (Api::CHAT, "http://h:8000/v1"));
        // The longest path wins: chat's, not completions'.
        let (api, _) = api_path_in("http://h/v1/chat/completions").unwrap();
        assert_eq!(api, Api::CHAT);
        let (api, base) = api_path_in("https://x/openai/v1/completions?api-version=1").unwrap();
        assert_eq!(api, Api::COMPLETIONS);
        assert_eq!(base, "https://x/openai/v1?api-version=1");
        assert_eq!(api_path_in("http://h:8000/v1"), None);
        assert_eq!(api_path_in("http://chat/completions"), None);
    }

    #[test]
    fn the_likely_base_is_suggested() {
        let likely = |u: &str| likely_base(u);
        assert_eq!(
            likely("127.0.0.1:8000").as_deref(),
            Some("http://127.0.0.1:8000/v1")
        );
        assert_eq!(
            likely("localhost:8000/v1").as_deref(),
            Some("http://localhost:8000/v1")
        );
        assert_eq!(
            likely("localhost:8000/v1/chat/completions").as_deref(),
            Some("http://localhost:8000/v1")
        );
        assert_eq!(likely("http://h:8000").as_deref(), Some("http://h:8000/v1"));
        assert_eq!(
            likely("http://h:8000/v1/chat/completions").as_deref(),
            Some("http://h:8000/v1")
        );
        assert_eq!(likely("http://h:8000/openai"), None);
        assert_eq!(likely(""), None);
        assert_eq!(likely("http://"), None);
    }

    #[test]
    fn a_path_goes_before_the_query() {
        assert_eq!(
            join("http://h:8000/v1", "/models"),
            "http://h:8000/v1/models"
        );
        assert_eq!(
            join("http://h:8000/v1/", "/chat/completions"),
            "http://h:8000/v1/chat/completions"
        );
        assert_eq!(
            join(
                "https://x.openai.azure.com/openai/v1?api-version=2024-10-21#f",
                "/models"
            ),
            "https://x.openai.azure.com/openai/v1/models?api-version=2024-10-21"
        );
        assert_eq!(join("http://h/v1/?", "/models"), "http://h/v1/models");
    }

    #[test]
    fn the_server_root_has_no_api_prefix_and_no_query() {
        assert_eq!(server_root("http://h:8000/v1"), "http://h:8000");
        assert_eq!(
            server_root("http://h:8000/v1/?api-version=1"),
            "http://h:8000"
        );
        assert_eq!(server_root("http://h:8000"), "http://h:8000");
        assert_eq!(server_root("http://h/api/v1"), "http://h/api");
    }
}
