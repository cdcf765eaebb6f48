//! A request's priority told in a header (`request-priority-header`, default
//! `x-request-priority`), as a gateway in front of vLLM reads it: when present it wins over
//! the body's `priority` field. A value that is not a whole number is refused with 400, as
//! the body field's would be.

use axum::http::HeaderMap;
use axum::response::Response;

use super::config::SimConfig;
use super::state::bad_request;

/// The priority the request's header states, `None` without one, or the 400 refusing it.
pub(crate) fn from_header(cfg: &SimConfig, headers: &HeaderMap) -> Result<Option<i64>, Response> {
    let Some(v) = headers.get(cfg.priority_header()) else {
        return Ok(None);
    };
    match v.to_str().ok().and_then(|s| s.trim().parse::<i64>().ok()) {
        Some(p) => Ok(Some(p)),
        None => Err(bad_request(
            &format!(
                "header `{}` must be a whole number (lower is served first)",
                cfg.priority_header()
            ),
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_read_by_its_configured_name() {
        let mut h = HeaderMap::new();
        let cfg = SimConfig::default();
        assert_eq!(from_header(&cfg, &h).ok(), Some(None));
        h.insert("x-request-priority", "-7".parse().unwrap());
        assert_eq!(from_header(&cfg, &h).ok(), Some(Some(-7)));
        let other = SimConfig {
            request_priority_header: Some("x-prio".into()),
            ..SimConfig::default()
        };
        assert_eq!(from_header(&other, &h).ok(), Some(None));
        h.insert("x-prio", "high".parse().unwrap());
        let refused = from_header(&other, &h).unwrap_err();
        assert_eq!(refused.status(), 400);
    }
}
