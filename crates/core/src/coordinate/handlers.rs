//! What each coordinator request may do. Every request first shows the run's token
//! ([`authorize`]: 401 otherwise, before any body is read); a shard's first arrival at the
//! barrier joins its index to its process (a second process with the same index is refused,
//! 409); its result is read as it arrives, refused (413) as soon as it passes the plan's cap,
//! accepted once (a second post is refused, 409, and replaces nothing), and only when the
//! shared validator and the shard's slice of the plan agree with it (422). Every refusal is
//! counted and logged without the token presented.

use infermeter_words::error_chain;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{ConnectInfo, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};

use super::admit::result_problems;
use super::refusal::Refusal;
use super::state::{Accepted, Shared, Step, unix_now_ns};
use super::token::TOKEN_ENV;
use super::wire::{Arrive, Release, Status, Time, Who};
use crate::results::{ParseError, parse_results};

/// Every body but a result's (a barrier arrival is a few hundred bytes).
pub(super) const MAX_SMALL_BODY: usize = 64 << 10;
/// The longest a result's upload may take (the client gives up then too).
const UPLOAD_DEADLINE: Duration = Duration::from_secs(120);

type Peer = ConnectInfo<SocketAddr>;

/// Why a request is refused: its status and the reason the peer is told (and the log keeps).
struct Refused(StatusCode, String);

impl From<(StatusCode, String)> for Refused {
    fn from((status, why): (StatusCode, String)) -> Refused {
        Refused(status, why)
    }
}

impl From<JsonRejection> for Refused {
    fn from(e: JsonRejection) -> Refused {
        Refused(e.status(), e.body_text())
    }
}

impl From<QueryRejection> for Refused {
    fn from(e: QueryRejection) -> Refused {
        Refused(e.status(), e.body_text())
    }
}

/// What a handler answers: its response, or its refusal counted and logged under `request`.
fn answer(sh: &Shared, peer: &Peer, request: &str, out: Result<Response, Refused>) -> Response {
    let Refused(status, why) = match out {
        Ok(response) => return response,
        Err(r) => r,
    };
    sh.refused(Refusal {
        peer: Some(peer.0),
        request: request.to_string(),
        status: status.as_u16(),
        why: why.clone(),
    });
    (status, why).into_response()
}

/// The token check in front of every route.
pub(super) async fn authorize(State(sh): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let presented = req.headers().get(header::AUTHORIZATION);
    if sh.cfg.token.admits(presented.map(|v| v.as_bytes())) {
        return next.run(req).await;
    }
    let peer = req.extensions().get::<ConnectInfo<SocketAddr>>().cloned();
    let what = if presented.is_some() {
        "a wrong token"
    } else {
        "no token"
    };
    let request = format!("{} {}", req.method(), req.uri().path());
    sh.refused(Refusal {
        peer: peer.map(|c| c.0),
        request,
        status: 401,
        why: format!("{what} (every call needs the run's token: {TOKEN_ENV})"),
    });
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        format!("the coordinator refused: {what}; give every shard the run's token ({TOKEN_ENV})"),
    )
        .into_response()
}

pub(super) async fn time() -> Json<Time> {
    Json(Time {
        unix_ns: unix_now_ns(),
    })
}

/// An instance id as clients draw them: hex, at most 64 characters.
fn instance_ok(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Why `a` may not arrive: another plan, another shard count, a step the plan lacks, or its
/// index already joined by another process. Joins the index to `a`'s instance otherwise.
fn admit_arrival(sh: &Shared, a: &Arrive) -> Result<(), (StatusCode, String)> {
    let cfg = &sh.cfg;
    let conflict = |why: String| Err((StatusCode::CONFLICT, why));
    if a.plan_hash != cfg.plan.hash {
        return conflict(format!(
            "shard {} runs plan {}, the coordinator plan {}: give every shard and the \
             coordinator the same scenario, params and seed",
            a.shard, a.plan_hash, cfg.plan.hash
        ));
    }
    if a.count != cfg.shards {
        return conflict(format!(
            "shard {}/{} of a {}-shard run: give every shard the coordinator's --shards",
            a.shard, a.count, cfg.shards
        ));
    }
    if a.shard >= cfg.shards || !instance_ok(&a.instance) {
        return Err((
            StatusCode::BAD_REQUEST,
            format!(
                "shard {} of a {}-shard run does not exist",
                a.shard, cfg.shards
            ),
        ));
    }
    match sh.step_stage(a.step) {
        None => {
            return Err((
                StatusCode::BAD_REQUEST,
                format!("the plan has no step {}", a.step),
            ));
        }
        Some(s) if s.name != a.stage => {
            return conflict(format!(
                "step {} is `{}` in the plan, not `{}`",
                a.step, s.name, a.stage
            ));
        }
        Some(_) => {}
    }
    let mut l = sh.ledger();
    if l.verdict.is_some() {
        return Err((
            StatusCode::GONE,
            "the run is over: it was merged and its verdict published".into(),
        ));
    }
    let joined = l
        .joined
        .entry(a.shard)
        .or_insert_with(|| a.instance.clone());
    if *joined != a.instance {
        return conflict(format!(
            "shard {} has already joined this run from another process: is `--shard {}/{}` \
             given to two shards?",
            a.shard, a.shard, cfg.shards
        ));
    }
    Ok(())
}

pub(super) async fn barrier(
    State(sh): State<Arc<Shared>>,
    peer: Peer,
    arrive: Result<Json<Arrive>, JsonRejection>,
) -> Response {
    let out = arrive_and_wait(&sh, arrive).await;
    answer(&sh, &peer, "POST /v1/barrier", out)
}

/// Records the arrival, then waits for the step's release (every shard, or its deadline).
async fn arrive_and_wait(
    sh: &Shared,
    arrive: Result<Json<Arrive>, JsonRejection>,
) -> Result<Response, Refused> {
    let Json(a) = arrive?;
    admit_arrival(sh, &a)?;
    let cfg = &sh.cfg;
    let mut rx = sh.changed.subscribe();
    {
        let mut l = sh.ledger();
        let now = Instant::now();
        l.activity = Some(now);
        l.steps
            .entry(a.step)
            .or_insert_with(|| Step {
                first: now,
                arrived: Default::default(),
                release: None,
            })
            .arrived
            .insert(a.shard);
    }
    sh.notify();
    let wait = if a.step == 0 {
        cfg.start_wait
    } else {
        cfg.wait
    };
    loop {
        let deadline = {
            let mut guard = sh.ledger();
            let l = &mut *guard;
            let Some(step) = l.steps.get_mut(&a.step) else {
                return Ok((StatusCode::INTERNAL_SERVER_ERROR, "step lost").into_response());
            };
            if let Some(r) = &step.release {
                return Ok(Json(r.clone()).into_response());
            }
            let deadline = step.first + wait;
            if step.arrived.len() as u32 >= cfg.shards || Instant::now() >= deadline {
                let lead = cfg.lead.as_nanos().min(i64::MAX as u128) as i64;
                let r = Release {
                    start_unix_ns: unix_now_ns().saturating_add(lead),
                    missing: (0..cfg.shards)
                        .filter(|i| !step.arrived.contains(i))
                        .collect(),
                    run_id: sh.run_id.clone(),
                };
                step.release = Some(r.clone());
                l.last_release = Some((a.step, Instant::now()));
                l.activity = None;
                drop(guard);
                sh.notify();
                return Ok(Json(r).into_response());
            }
            deadline
        };
        tokio::select! {
            _ = rx.changed() => {}
            _ = tokio::time::sleep_until(deadline.into()) => {}
        }
    }
}

/// Whether `who` speaks for its index: the process that joined it (409 otherwise).
fn check_who(sh: &Shared, who: &Who) -> Result<(), Refused> {
    let why = match sh.ledger().joined.get(&who.shard) {
        Some(i) if *i == who.instance => return Ok(()),
        Some(_) => format!("shard {} joined this run from another process", who.shard),
        None => format!("shard {} has not joined this run", who.shard),
    };
    Err(Refused(StatusCode::CONFLICT, why))
}

/// Marks shard `index`'s result as being received; unmarked when dropped.
struct Receiving {
    sh: Arc<Shared>,
    index: u32,
}

impl Drop for Receiving {
    fn drop(&mut self) {
        self.sh.ledger().receiving.remove(&self.index);
    }
}

/// Claims the right to send shard `who`'s result: refused when it has one, or one is coming.
fn claim(sh: &Arc<Shared>, who: &Who) -> Result<Receiving, Refused> {
    check_who(sh, who)?;
    let mut l = sh.ledger();
    if l.verdict.is_some() {
        return Err(Refused(
            StatusCode::GONE,
            format!(
                "shard {}: too late, the run was merged without it",
                who.shard
            ),
        ));
    }
    if l.results.contains_key(&who.shard) || !l.receiving.insert(who.shard) {
        return Err(Refused(
            StatusCode::CONFLICT,
            format!(
                "shard {}'s result has already been received; a second one is refused and \
                 replaces nothing",
                who.shard
            ),
        ));
    }
    Ok(Receiving {
        sh: sh.clone(),
        index: who.shard,
    })
}

/// Why a body was not read whole.
enum Unread {
    TooLarge,
    Broken(String),
}

/// The body, read as it arrives and given up as soon as it passes `cap` bytes. The chunks are
/// kept as they came and joined once at the end: a buffer grown by doubling would hold up to
/// twice the cap (and an allocator keeps what it freed).
async fn read_capped(body: Body, cap: u64) -> Result<Vec<u8>, Unread> {
    let mut stream = body.into_data_stream();
    let mut chunks = Vec::new();
    let mut len = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| Unread::Broken(e.to_string()))?;
        len += chunk.len() as u64;
        if len > cap {
            return Err(Unread::TooLarge);
        }
        chunks.push(chunk);
    }
    Ok(chunks.concat())
}

pub(super) async fn results(
    State(sh): State<Arc<Shared>>,
    peer: Peer,
    who: Result<Query<Who>, QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let out = receive_result(&sh, who, &headers, body).await;
    answer(&sh, &peer, "POST /v1/results", out)
}

/// Reads, checks and keeps one shard's result: once per shard, capped, on time, consistent
/// and agreeing with the shard's slice of the plan.
async fn receive_result(
    sh: &Arc<Shared>,
    who: Result<Query<Who>, QueryRejection>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, Refused> {
    let Query(who) = who?;
    let receiving = claim(sh, &who)?;
    let bytes = upload(sh, &who, headers, body).await?;
    let r = match parse_results(&bytes) {
        Ok(r) => r,
        Err(e @ ParseError::Json(_)) => {
            let why = format!("shard {}: {}", who.shard, error_chain(&e));
            return Err(Refused(StatusCode::BAD_REQUEST, why));
        }
        Err(ParseError::Inconsistent(e)) => {
            let why = format!("shard {}'s result: {e}", who.shard);
            return Err(Refused(StatusCode::UNPROCESSABLE_ENTITY, why));
        }
    };
    let problems = result_problems(&sh.cfg.plan, sh.cfg.shards, who.shard, &r);
    if !problems.is_empty() {
        let why = format!("shard {}'s result: {}", who.shard, problems.join("; "));
        return Err(Refused(StatusCode::UNPROCESSABLE_ENTITY, why));
    }
    let digest = hex(&Sha256::digest(&bytes));
    {
        let mut l = sh.ledger();
        if l.verdict.is_some() {
            let why = format!(
                "shard {}: too late, the run was merged without it",
                who.shard
            );
            return Err(Refused(StatusCode::GONE, why));
        }
        let now = Instant::now();
        l.first_result.get_or_insert(now);
        l.activity = Some(now);
        l.results.insert(who.shard, Accepted { results: r, digest });
    }
    drop(receiving);
    sh.notify();
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The result's bytes: refused past the plan's cap (declared or as it arrives), broken, or
/// later than [`UPLOAD_DEADLINE`].
async fn upload(
    sh: &Shared,
    who: &Who,
    headers: &HeaderMap,
    body: Body,
) -> Result<Vec<u8>, Refused> {
    let cap = sh.result_cap;
    let too_large = || {
        Refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "shard {}'s result is larger than any result of this plan ({cap} bytes)",
                who.shard
            ),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > cap) {
        return Err(too_large());
    }
    match tokio::time::timeout(UPLOAD_DEADLINE, read_capped(body, cap)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(Unread::TooLarge)) => Err(too_large()),
        Ok(Err(Unread::Broken(why))) => Err(Refused(StatusCode::BAD_REQUEST, why)),
        Err(_) => Err(Refused(
            StatusCode::REQUEST_TIMEOUT,
            format!("shard {}'s result did not arrive within 120 s", who.shard),
        )),
    }
}

pub(super) async fn verdict(
    State(sh): State<Arc<Shared>>,
    peer: Peer,
    who: Result<Query<Who>, QueryRejection>,
) -> Response {
    let out = wait_for_verdict(&sh, who).await;
    answer(&sh, &peer, "GET /v1/verdict", out)
}

/// The run's verdict once published, with the digest of the result this shard sent.
async fn wait_for_verdict(
    sh: &Shared,
    who: Result<Query<Who>, QueryRejection>,
) -> Result<Response, Refused> {
    let Query(who) = who?;
    check_who(sh, &who)?;
    let mut rx = sh.changed.subscribe();
    loop {
        {
            let mut l = sh.ledger();
            if let Some(mut v) = l.verdict.clone() {
                l.fetched.insert(who.shard);
                v.your_result = l.results.get(&who.shard).map(|a| a.digest.clone());
                drop(l);
                sh.notify();
                return Ok(Json(v).into_response());
            }
        }
        if rx.changed().await.is_err() {
            return Ok((StatusCode::SERVICE_UNAVAILABLE, "shutting down").into_response());
        }
    }
}

pub(super) async fn status(State(sh): State<Arc<Shared>>) -> Json<Status> {
    let l = sh.ledger();
    Json(Status {
        shards: sh.cfg.shards,
        joined: l.joined.keys().copied().collect(),
        released: l
            .steps
            .iter()
            .filter(|(_, s)| s.release.is_some())
            .map(|(k, s)| (*k, s.arrived.iter().copied().collect()))
            .collect(),
        results: l.results.keys().copied().collect(),
        done: l.verdict.is_some(),
        refused: l.refused,
    })
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
