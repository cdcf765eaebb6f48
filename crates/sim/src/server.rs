//! The HTTP side: axum routes for the OpenAI endpoints, request validation and error
//! answers, streaming and non-streaming bodies fed by the scheduler, and the [`SimHandle`]
//! that starts and stops it all.

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::apis;
use super::config::{ConfigError, SimConfig};
use super::conn::{ConnTag, SimListener};
use super::endpoints;
use super::generate::{common_headers, serve, unix_now};
use super::metrics::SimMetrics;
use super::prefix::PrefixCache;
use super::scheduler::Scheduler;
use super::state::{AppState, json_response};
use super::trace::{TraceOptions, TraceRecord};

/// Why the simulator could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("failed to listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("failed to open trace file: {0}")]
    TraceFile(std::io::Error),
    #[error("failed to write trace file: {0}")]
    TraceWrite(std::io::Error),
    #[error("server failed: {0}")]
    Serve(std::io::Error),
    #[error("simulator task panicked")]
    Panicked,
}

/// A running simulator. Dropping it without [`SimHandle::shutdown`] leaves the server running
/// until the runtime ends.
pub struct SimHandle {
    addr: SocketAddr,
    epoch: Instant,
    stop: oneshot::Sender<()>,
    server: JoinHandle<std::io::Result<()>>,
    scheduler: JoinHandle<()>,
    writer: Option<JoinHandle<std::io::Result<()>>>,
    trace: Option<mpsc::UnboundedReceiver<TraceRecord>>,
}

impl SimHandle {
    /// The bound address (the real port when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/v1`, the base URL an OpenAI client is pointed at.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The instant trace times count from.
    pub fn started_at(&self) -> std::time::Instant {
        self.epoch.into_std()
    }

    /// The in-process trace receiver, when started with [`TraceOptions::record`]; records
    /// arrive as requests finish. Returns `None` the second time.
    pub fn take_trace(&mut self) -> Option<mpsc::UnboundedReceiver<TraceRecord>> {
        self.trace.take()
    }

    /// Stops accepting connections, lets in-flight responses finish, then stops the scheduler
    /// and flushes the trace file.
    pub async fn shutdown(self) -> Result<(), SimError> {
        let _ = self.stop.send(());
        self.server
            .await
            .map_err(|_| SimError::Panicked)?
            .map_err(SimError::Serve)?;
        self.scheduler.await.map_err(|_| SimError::Panicked)?;
        if let Some(w) = self.writer {
            w.await
                .map_err(|_| SimError::Panicked)?
                .map_err(SimError::TraceWrite)?;
        }
        Ok(())
    }
}

/// Starts the simulator on `listen` (port 0 picks a free port) without a trace.
pub async fn start(config: SimConfig, listen: SocketAddr) -> Result<SimHandle, SimError> {
    start_with_trace(config, listen, TraceOptions::default()).await
}

/// Starts the simulator, writing ground truth where `trace` says.
pub async fn start_with_trace(
    config: SimConfig,
    listen: SocketAddr,
    trace: TraceOptions,
) -> Result<SimHandle, SimError> {
    config.validate()?;
    // Building the tokenizer takes a fraction of a second: do it before serving so the first
    // request's latency is not charged with it.
    let _ = tokio::task::spawn_blocking(|| {
        tiktoken_rs::cl100k_base_singleton();
    })
    .await;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| SimError::Bind {
            addr: listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| SimError::Bind {
        addr: listen,
        source,
    })?;
    let (trace_tx, writer, trace_rx) = super::trace::setup(&trace)
        .await
        .map_err(SimError::TraceFile)?;
    let epoch = Instant::now();
    let trace_tx = match &config.otlp_traces_endpoint {
        Some(url) => Some(super::otlp::spawn(url, &config.model, epoch, trace_tx)),
        None => trace_tx,
    };
    let (intake, intake_rx) = mpsc::unbounded_channel();
    let metrics = Arc::new(SimMetrics::new(&config));
    let prefix = config.prefix_cache.then(|| {
        let cache = PrefixCache::new(config.prefix_cache_block, config.prefix_cache_capacity);
        Arc::new(Mutex::new(cache))
    });
    let scheduler = tokio::spawn(
        Scheduler::new(
            config.clone(),
            epoch,
            intake_rx,
            trace_tx.clone(),
            metrics.clone(),
            prefix.clone(),
        )
        .run(),
    );
    let listener = SimListener::new(listener, config.close_after_stream);
    let affinity = config
        .session_header
        .as_deref()
        .and_then(super::affinity::Affinity::new);
    let state = Arc::new(AppState {
        store: Arc::new(super::store::ResponseStore::of(&config)),
        affinity,
        config,
        epoch,
        next_id: AtomicU64::new(0),
        intake,
        trace: trace_tx,
        metrics,
        prefix,
    });
    let app = router(state).into_make_service_with_connect_info::<ConnTag>();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
    });
    Ok(SimHandle {
        addr,
        epoch,
        stop,
        server,
        scheduler,
        writer,
        trace: trace_rx,
    })
}

fn router(state: Arc<AppState>) -> Router {
    // The generation routes add the common headers themselves: a layer costs a boxed future
    // per request, and these are the simulator's hot path. One per API kind.
    let mut generation = Router::new();
    for served in apis::served() {
        let handler = move |State(app): State<Arc<AppState>>,
                            ConnectInfo(conn): ConnectInfo<ConnTag>,
                            headers: HeaderMap,
                            body: Bytes| {
            if let Some(a) = &app.affinity {
                a.observe(&headers);
            }
            serve(app, conn, served, headers, body)
        };
        generation = generation.route(&format!("/v1{}", served.api.path()), post(handler));
    }
    let rest = Router::new()
        .route("/v1/models", get(models))
        .route("/health", get(|| async { StatusCode::OK }))
        .route("/metrics", get(metrics))
        .route("/tokenize", post(endpoints::tokenize))
        .route("/detokenize", post(endpoints::detokenize))
        .route("/reset_prefix_cache", post(endpoints::reset_prefix_cache))
        .route(
            "/flush_cache",
            get(endpoints::flush_cache).post(endpoints::flush_cache),
        )
        .route("/slots/{id}", post(endpoints::slot_action))
        .route("/version", get(endpoints::version))
        .route("/props", get(endpoints::props))
        .route("/get_server_info", get(endpoints::server_info))
        .layer(axum::middleware::map_response_with_state(
            state.clone(),
            with_common_headers,
        ));
    generation.merge(rest).with_state(state)
}

async fn with_common_headers(State(app): State<Arc<AppState>>, mut resp: Response) -> Response {
    common_headers(&mut resp, app.config.close_after_stream);
    resp
}

async fn models(State(app): State<Arc<AppState>>) -> Response {
    let c = &app.config;
    let mut data = vec![serde_json::json!({
        "id": c.model, "object": "model", "created": unix_now(),
        "owned_by": "infermeter", "root": c.model, "parent": null,
        "max_model_len": c.kv_capacity,
    })];
    // Adapters as vLLM lists its LoRA modules: their own id, the base model as parent.
    data.extend(c.adapters.keys().map(|name| {
        serde_json::json!({
            "id": name, "object": "model", "created": unix_now(),
            "owned_by": "infermeter", "root": name, "parent": c.model,
            "max_model_len": c.kv_capacity,
        })
    }));
    let body = serde_json::json!({ "object": "list", "data": data });
    json_response(StatusCode::OK, body.to_string(), None)
}

/// vLLM-format Prometheus metrics (see `sim::metrics`).
async fn metrics(State(app): State<Arc<AppState>>) -> Response {
    let mut body = app
        .metrics
        .render(&app.config.model, app.config.kv_capacity);
    if let Some(a) = &app.affinity {
        a.render(&mut body);
    }
    app.store.render(&mut body);
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}
