//! A request's priority told in a header (`request-priority-header`, default
//! `x-request-priority`), as a gateway in front of vLLM reads it: when present it wins over
//! the body's `priority` field. A value that is not a whole number is refused with 400, as
//! the body field's would be.

use axum::http::HeaderMap;

use super::config::SimConfig;

/// The priority the request is scheduled by when its body does not decide: its header's,
/// `None` without one, and 0 for every request under `ignore-priority` (which wins over the
/// body too); `Err` with the 400's message for a header that is not a whole number.
pub(crate) fn told(cfg: &SimConfig, headers: &HeaderMap) -> Result<Option<i64>, String> {
    if cfg.ignore_priority {
        return Ok(Some(0));
    }
    let Some(v) = headers.get(cfg.priority_header()) else {
        return Ok(None);
    };
    match v.to_str().ok().and_then(|s| s.trim().parse::<i64>().ok()) {
        Some(p) => Ok(Some(p)),
        None => Err(format!(
            "header `{}` must be a whole number (lower is served first)",
            cfg.priority_header()
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
        assert_eq!(told(&cfg, &h), Ok(None));
        h.insert("x-request-priority", "-7".parse().unwrap());
        assert_eq!(told(&cfg, &h), Ok(Some(-7)));
        let other = SimConfig {
            request_priority_header: Some("x-prio".into()),
            ..SimConfig::default()
        };
        assert_eq!(told(&other, &h), Ok(None));
        h.insert("x-prio", "high".parse().unwrap());
        assert!(told(&other, &h).unwrap_err().contains("x-prio"));
        let ignoring = SimConfig {
            ignore_priority: true,
            ..SimConfig::default()
        };
        assert_eq!(told(&ignoring, &h), Ok(Some(0)));
    }
}
