//! What the simulator's HTTP handlers share: the state behind every route and the JSON
//! answers, in a file of their own so the routes (`server.rs`) and the extra endpoints
//! (`endpoints.rs`) both import them and neither imports the other back.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::config::SimConfig;
use super::metrics::SimMetrics;
use super::scheduler::{NewSeq, SharedPrefixCache};
use super::trace::TraceRecord;
use super::wire;

/// The response header carrying the simulator's request id (the `id` in its trace).
pub const SIM_ID_HEADER: &str = "x-infermeter-sim-id";

pub(crate) struct AppState {
    pub(crate) config: SimConfig,
    pub(crate) epoch: Instant,
    pub(crate) next_id: AtomicU64,
    pub(crate) intake: mpsc::UnboundedSender<NewSeq>,
    pub(crate) trace: Option<mpsc::UnboundedSender<TraceRecord>>,
    pub(crate) metrics: Arc<SimMetrics>,
    /// `Some` with `prefix-cache`.
    pub(crate) prefix: Option<SharedPrefixCache>,
    /// `Some` with `session-header`.
    pub(crate) affinity: Option<super::affinity::Affinity>,
    /// The Responses API's stored responses (`store.rs`).
    pub(crate) store: Arc<super::store::ResponseStore>,
}

pub(crate) fn json_response(status: StatusCode, body: String, id: Option<u64>) -> Response {
    let mut resp = (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let Some(id) = id {
        resp.headers_mut()
            .insert(SIM_ID_HEADER, HeaderValue::from(id));
    }
    resp
}

pub(crate) fn bad_request(message: &str, param: Option<&str>) -> Response {
    let body = wire::error_body(400, "BadRequestError", message, param);
    json_response(StatusCode::BAD_REQUEST, body, None)
}
