//! `target "URL" { … }` and `target "sim" { … }`: where requests go. In a sim target every child
//! that is not a common target setting is a simulator setting (`sim_target.rs`).

use kdl::{KdlNode, KdlValue};
use serde_json::{Map, Value};

use super::ctx::{Ctx, NodeReader, Once, one_arg};
use super::error::suggest;
use super::model::{Endpoint, Target};
use super::settings::{Entries, Setting, find, names, with_reader};
use super::sim_target;
use super::written::Spanned;
use crate::protocol::{Api, CacheReset, ReasoningEffort, RequestSettings, RunSettings};

/// The settings of every target; a simulator target's others are the simulator's
/// ([`sim_target::fields`]).
const COMMON: &[Setting<Entries<TargetRead>>] = &[
    Setting::once("api", |ctx, r, st| api_setting(ctx, r, &mut st.t)),
    Setting::once("model", |ctx, r, st| {
        if let Some(v) = one_arg(ctx, r, "a model name")
            && let Some(s) = ctx.name_string(&v, "model")
        {
            // The simulator answers as the model the target asks for.
            if let Some(sim) = &mut st.sim {
                sim.insert("model".into(), Value::String(s.clone()));
            }
            st.t.request.model = Some(s);
        }
    }),
    Setting::once("api-key", |ctx, r, st| api_key_setting(ctx, r, &mut st.t)),
    Setting::once("timeout", |ctx, r, st| {
        if let Some(v) = one_arg(ctx, r, "a duration like \"60s\"")
            && let Some(d) = ctx.positive_duration(&v, "timeout")
        {
            st.t.request.timeout = d;
        }
    }),
    Setting::many("header", |ctx, r, st| header_setting(ctx, r, &mut st.t)),
    Setting::once("body", |ctx, r, st| {
        st.t.request.extra_body.extend(super::body::fields(ctx, r));
    }),
    Setting::once("ignore-eos", |ctx, r, st| {
        let eos = &mut st.t.request.ignore_eos;
        *eos = bool_setting(ctx, r).unwrap_or(*eos);
    }),
    Setting::once("reasoning-effort", |ctx, r, st| {
        reasoning_effort_setting(ctx, r, &mut st.t);
    }),
    Setting::once("max-event-size", |ctx, r, st| {
        max_event_size_setting(ctx, r, &mut st.t);
    }),
    Setting::once("cache-salt", |ctx, r, st| {
        st.t.run.cache_salt = bool_setting(ctx, r).unwrap_or(st.t.run.cache_salt);
    }),
    Setting::once("reset-cache", |ctx, r, st| {
        reset_cache_setting(ctx, r, &mut st.t)
    }),
    Setting::once("batch", |ctx, r, st| {
        if let Some(v) = one_arg(ctx, r, "the inputs per request, e.g. 8")
            && let Some(n) = ctx.uint(&v, "batch", 1, MAX_BATCH)
        {
            st.t.request.batch = n as u32;
        }
    }),
    // Declared, not measured: what the per-GPU throughput and the frontier divide by.
    Setting::once("gpus", |ctx, r, st| {
        if let Some(v) = one_arg(ctx, r, "the GPUs serving the target, e.g. 8")
            && let Some(n) = ctx.uint(&v, "gpus", 1, MAX_GPUS)
        {
            st.t.run.gpus = Some(n as u32);
        }
    }),
    Setting::once("network", |ctx, r, st| {
        st.t.run.network = super::network::read(ctx, r);
    }),
    Setting::once("stream", |ctx, r, st| {
        st.t.request.stream = bool_setting(ctx, r).unwrap_or(st.t.request.stream);
    }),
];

/// More GPUs than any one target serves: a typo's guard.
const MAX_GPUS: u64 = 1 << 20;

/// Where requests go when the target lists several URLs (read by `route.rs`).
const ROUTING: &[Setting<Entries<TargetRead>>] = &[
    Setting::many("url", |ctx, r, st| st.routing.url(ctx, r)),
    Setting::once("route", |ctx, r, st| st.routing.policy(ctx, r)),
    Setting::once("affinity-header", |ctx, r, st| {
        super::route::affinity(ctx, r, &mut st.t);
    }),
];

/// How a class's priority is sent (read by `priority_as.rs`).
const PRIORITY: &[Setting<Entries<TargetRead>>] = &[
    Setting::once("priority-as", |ctx, r, st| st.priority.told(ctx, r)),
    Setting::once("priority-header", |ctx, r, st| st.priority.header(ctx, r)),
];

/// Every setting a target's block may hold, but a simulator's.
const SETTINGS: [&[Setting<Entries<TargetRead>>]; 3] = [COMMON, ROUTING, PRIORITY];

/// A target as its block is read: the routing and priority children are checked together
/// once it is.
struct TargetRead {
    t: Target,
    /// The simulator's settings as written, for a simulator target.
    sim: Option<Map<String, Value>>,
    routing: super::route::Routing,
    priority: super::priority_as::PriorityAs,
}

pub(crate) fn default_target() -> Target {
    Target {
        endpoint: Endpoint::Sim(Box::default()),
        request: RequestSettings::default(),
        run: RunSettings::default(),
    }
}

pub(crate) fn parse(ctx: &mut Ctx<'_>, node: &KdlNode) -> Target {
    let mut st = TargetRead {
        t: default_target(),
        sim: None,
        routing: super::route::Routing::default(),
        priority: super::priority_as::PriorityAs::default(),
    };
    let mut r = NodeReader::new(ctx, node);
    let has_arg = r.arg_count() > 0;
    if endpoint_arg(ctx, node, &mut r, &mut st.t) {
        st.sim = Some(Map::new());
    }
    let sim_fields = sim_target::fields();
    let mut once = Once::default();
    for child in r.children() {
        let setting = find(&SETTINGS, child.name().value());
        if !setting.is_some_and(|s| s.many) && !once.first(ctx, child, "`target`") {
            continue;
        }
        match setting {
            Some(s) => with_reader(ctx, child, |ctx, r| (s.read)(ctx, r, &mut st)),
            None => other_setting(ctx, child, st.sim.as_mut(), &sim_fields),
        }
    }
    let TargetRead {
        mut t,
        sim,
        routing,
        priority,
    } = st;
    routing.finish(ctx, &mut t, has_arg);
    super::route::check_headers(ctx, node, &t);
    priority.finish(ctx, &mut t);
    api_defaults(ctx, r.children(), &mut t);
    r.finish(ctx);
    batch_fits_api(ctx, node, &t);
    super::network::fits_endpoint(ctx, node, &t);
    if let Some(sim) = sim {
        sim_target::config(ctx, node, &mut t, sim);
    }
    t
}

/// A child no table names: a simulator setting in a simulator target, else an error.
fn other_setting(
    ctx: &mut Ctx<'_>,
    child: &KdlNode,
    sim: Option<&mut Map<String, Value>>,
    sim_fields: &[String],
) {
    let name = child.name().value();
    let simulator = sim_fields.iter().any(|f| f == name);
    match sim {
        Some(sim) if simulator => sim_target::setting(ctx, child, sim),
        Some(_) => {
            let mut known = names(&SETTINGS);
            known.extend(sim_fields.iter().map(String::as_str));
            ctx.error(
                ctx.name_span(child),
                format!("unknown setting `{name}` in target \"sim\""),
                "not a target or simulator setting",
                Some(ctx.unknown_help(name, "`target`", &known, "setting")),
            );
        }
        None if simulator => ctx.error(
            ctx.name_span(child),
            format!("`{name}` is a simulator setting"),
            "only valid in target \"sim\"",
            Some("simulator settings apply to target \"sim\" only; remove it".into()),
        ),
        None => ctx.unknown_node(child, "`target`", &names(&SETTINGS)),
    }
}

/// The target's argument: `"sim"` (or none, without `url` children: an error) leaves the
/// simulator; a URL sets it. Whether the target is the simulator.
fn endpoint_arg(ctx: &mut Ctx<'_>, node: &KdlNode, r: &mut NodeReader<'_>, t: &mut Target) -> bool {
    let has_arg = r.arg_count() > 0;
    match r.arg(ctx, 0) {
        None if !has_arg && super::route::Routing::listed(node) => return false,
        None if !has_arg => ctx.error(
            ctx.name_span(node),
            "`target` needs a URL or \"sim\"",
            "missing URL",
            Some("write target \"http://127.0.0.1:8000/v1\" or target \"sim\"".into()),
        ),
        None => {}
        Some(v) => {
            if let Some(url) = ctx.string(&v, "target") {
                if url == "sim" {
                } else if url.starts_with("http://") || url.starts_with("https://") {
                    t.endpoint = Endpoint::Url(Spanned::new(url, v.span));
                    return false;
                } else {
                    // The suggestion `run --url` and `wait` make for the same mistake.
                    let likely = crate::protocol::likely_base(&url)
                        .unwrap_or_else(|| "http://127.0.0.1:8000/v1".into());
                    ctx.error(
                        v.span,
                        "invalid target",
                        format!("expected \"sim\" or an http(s) URL, got {}", v.shown()),
                        Some(format!("write e.g. target \"{likely}\"")),
                    );
                }
            }
        }
    }
    true
}

/// The most inputs one pooling request may carry: far above what servers take (vLLM's
/// default batch is a few hundred), low enough that a typo does not build gigabyte bodies.
const MAX_BATCH: u64 = 65_536;

/// `batch N` is a pooling API's inputs per request: a generation API sends one prompt.
fn batch_fits_api(ctx: &mut Ctx<'_>, node: &KdlNode, t: &Target) {
    let api = t.request.api;
    if t.request.batch <= 1 || !api.kind().answer().streams() {
        return;
    }
    let span = node
        .children()
        .and_then(|c| c.nodes().iter().find(|n| n.name().value() == "batch"))
        .map_or_else(|| ctx.name_span(node), |n| ctx.name_span(n));
    let pooling: Vec<String> = crate::protocol::REGISTRY
        .iter()
        .filter(|a| !a.kind().answer().streams())
        .map(|a| format!("\"{a}\""))
        .collect();
    ctx.error(
        span,
        format!("`batch` does not apply to api \"{api}\""),
        "a generation request sends one prompt",
        Some(format!(
            "`batch` is the inputs per request of a pooling API ({}); remove it",
            pooling.join(", ")
        )),
    );
}

/// What depends on the API, once every setting is read (`api` may come after them): the
/// API's `ignore-eos` default where the target does not say, and a reasoning effort only
/// where the API can carry one.
fn api_defaults(ctx: &mut Ctx<'_>, children: &[KdlNode], t: &mut Target) {
    let named = |name: &str| children.iter().find(|c| c.name().value() == name);
    let kind = t.request.api.kind();
    if named("ignore-eos").is_none() {
        t.request.ignore_eos = kind.ignore_eos_default();
    }
    if let Some(node) = named("stream")
        && !t.request.stream
        && !kind.answers_whole()
    {
        stream_error(ctx, node, t.request.api);
    }
    if let Some(node) = named("reasoning-effort")
        && !kind.reasoning_effort()
    {
        let able: Vec<String> = crate::protocol::REGISTRY
            .iter()
            .filter(|a| a.kind().reasoning_effort())
            .map(|a| format!("api \"{a}\""))
            .collect();
        ctx.error(
            ctx.name_span(node),
            format!("api \"{}\" carries no reasoning effort", t.request.api),
            "not sent by this API",
            Some(format!(
                "use {}, or remove reasoning-effort",
                able.join(" or ")
            )),
        );
    }
}

/// `stream #false` on an API whose whole answer is not read (or that has no stream).
fn stream_error(ctx: &mut Ctx<'_>, node: &KdlNode, api: Api) {
    let able: Vec<String> = crate::protocol::REGISTRY
        .iter()
        .filter(|a| a.kind().answers_whole())
        .map(|a| format!("api \"{a}\""))
        .collect();
    let why = if api.kind().answer().streams() {
        "its whole answer is not read"
    } else {
        "its answer always comes whole"
    };
    ctx.error(
        ctx.name_span(node),
        format!("api \"{api}\" cannot be asked stream #false"),
        why,
        Some(format!("use {}, or remove stream", able.join(" or "))),
    );
}

/// `reasoning-effort "low"|"medium"|"high"`.
fn reasoning_effort_setting(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, t: &mut Target) {
    const EXPECTED: &str = "\"low\", \"medium\" or \"high\"";
    if let Some(v) = one_arg(ctx, r, EXPECTED)
        && let Some(s) = ctx.name_string(&v, "reasoning-effort")
    {
        match ReasoningEffort::from_name(&s) {
            Some(e) => t.request.reasoning_effort = Some(e),
            None => ctx.error(
                v.span,
                format!("unknown reasoning-effort `{s}`"),
                format!("expected {EXPECTED}"),
                Some(suggest(&s, &ReasoningEffort::NAMES, "value")),
            ),
        }
    }
}

/// `api "chat"`: one of the registered API kinds.
fn api_setting(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, t: &mut Target) {
    let expected = Api::names_quoted();
    let Some(v) = one_arg(ctx, r, &expected) else {
        return;
    };
    let Some(s) = ctx.string(&v, "api") else {
        return;
    };
    match Api::from_name(&s) {
        Some(api) => t.request.api = api,
        None => ctx.error(
            v.span,
            format!("unknown api `{s}`"),
            format!("expected {expected}"),
            Some(suggest(&s, Api::names(), "api")),
        ),
    }
}

/// `api-key env="VARIABLE"`: the variable's name, never the key.
fn api_key_setting(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, t: &mut Target) {
    if let Some(var) = api_key_env(ctx, r) {
        t.request.api_key_env = Some(var);
    }
}

/// `api-key env="VARIABLE"` (the target's, a judge's): the variable's name, `None` after an
/// error (a key written in the file is refused, never kept).
pub(super) fn api_key_env(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<String> {
    let child = r.node;
    let mut found = None;
    if r.arg_count() > 0 {
        let v = r.arg(ctx, 0);
        r.skip_args(usize::MAX);
        ctx.error(
            v.map_or_else(|| ctx.name_span(child), |v| v.span),
            "write the name of an environment variable, not the key",
            "a secret does not belong in a scenario file",
            Some(
                "put the key in an environment variable and write api-key env=\"OPENAI_API_KEY\""
                    .into(),
            ),
        );
    }
    match r.prop(ctx, "env") {
        Some(v) => {
            if let Some(s) = ctx.name_string(&v, "env") {
                if s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    found = Some(s);
                } else {
                    ctx.error(
                        v.span,
                        "invalid environment variable name",
                        "use letters, digits and _ only",
                        None,
                    );
                }
            }
        }
        None if r.arg_count() == 0 => ctx.error(
            ctx.name_span(child),
            "`api-key` needs env=\"VARIABLE\"",
            "missing env=",
            Some("write api-key env=\"OPENAI_API_KEY\"".into()),
        ),
        None => {}
    }
    found
}

/// `header "NAME" "VALUE"`, repeatable, kept in file order: a name that is an HTTP token and
/// a value on one line of printable ASCII (see [`super::header_name_problem`]), so that nothing
/// in a value becomes a second header on the wire.
fn header_setting(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, t: &mut Target) {
    let key = r.arg(ctx, 0);
    let val = r.arg(ctx, 1);
    let (Some(k), Some(v)) = (key, val) else {
        if r.arg_count() < 2 {
            ctx.error(
                ctx.name_span(r.node),
                "`header` needs a name and a value",
                "missing name or value",
                Some("write header \"X-Team\" \"perf\"".into()),
            );
        }
        return;
    };
    let key = ctx.name_string(&k, "header name");
    let val = ctx.string(&v, "header value");
    let problem = key
        .as_deref()
        .and_then(super::header_name_problem)
        .map(|p| (k.span, p))
        .or_else(|| {
            let p = super::header_value_problem(val.as_deref()?)?;
            Some((v.span, p))
        });
    match (problem, key, val) {
        (Some((span, problem)), _, _) => ctx.error(
            span,
            "invalid header",
            problem,
            Some("write header \"X-Team\" \"perf\"".into()),
        ),
        (None, Some(key), Some(val)) => t.request.headers.push((key, val)),
        _ => {}
    }
}

/// A `#true` / `#false` setting's value; `None` after an error.
fn bool_setting(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<bool> {
    let name = r.name();
    let v = one_arg(ctx, r, "#true or #false")?;
    ctx.boolean(&v, name)
}

/// `reset-cache "auto"|"vllm"|"sglang"|"llama-cpp"`.
fn reset_cache_setting(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, t: &mut Target) {
    const EXPECTED: &str = "\"auto\", \"vllm\", \"sglang\" or \"llama-cpp\"";
    if let Some(v) = one_arg(ctx, r, EXPECTED)
        && let Some(s) = ctx.name_string(&v, "reset-cache")
    {
        match CacheReset::from_name(&s) {
            Some(k) => t.run.reset_cache = Some(k),
            None => ctx.error(
                v.span,
                format!("unknown reset-cache `{s}`"),
                format!("expected {EXPECTED}"),
                Some(suggest(&s, &CacheReset::NAMES, "value")),
            ),
        }
    }
}

/// `max-event-size "1MiB"` (or a number of bytes), at least 1 KiB.
fn max_event_size_setting(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, t: &mut Target) {
    let Some(v) = one_arg(ctx, r, "a size like \"1MiB\"") else {
        return;
    };
    let parsed = match &v.value {
        KdlValue::Integer(i) => u64::try_from(*i).map_err(|_| SizeError::Negative),
        KdlValue::String(s) => parse_size(s),
        _ => Err(SizeError::NotASize),
    };
    match parsed {
        Ok(n) if n >= 1024 => t.run.max_event_bytes = n,
        Ok(_) => ctx.error(
            v.span,
            "`max-event-size` too small",
            "must be at least 1KiB: a final chunk with usage takes about that",
            Some("write e.g. max-event-size \"1MiB\"".into()),
        ),
        Err(e) => ctx.error(
            v.span,
            "invalid `max-event-size`",
            e.to_string(),
            Some("write e.g. max-event-size \"1MiB\" (B, KB, KiB, MB, MiB, GB, GiB)".into()),
        ),
    }
}

/// Why a `max-event-size` is not a size.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum SizeError {
    #[error("must be positive")]
    Negative,
    #[error("expected a size like \"1MiB\" or a number of bytes")]
    NotASize,
    #[error("`{0}` does not start with a number")]
    NoNumber(String),
    #[error("unknown size unit `{0}`")]
    UnknownUnit(String),
    #[error("`{0}` is too large")]
    TooLarge(String),
}

/// `"1MiB"`, `"512KiB"`, `"64KB"`, `"2048"`: a byte count with an optional unit.
pub(super) fn parse_size(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: f64 = number
        .parse()
        .map_err(|_| SizeError::NoNumber(text.to_string()))?;
    let factor: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "KiB" => 1024.0,
        "MB" => 1e6,
        "MiB" => 1024.0 * 1024.0,
        "GB" => 1e9,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        other => return Err(SizeError::UnknownUnit(other.to_string())),
    };
    let bytes = n * factor;
    if !bytes.is_finite() || bytes > u64::MAX as f64 {
        return Err(SizeError::TooLarge(text.to_string()));
    }
    Ok(bytes as u64)
}
