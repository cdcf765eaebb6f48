//! `target "URL" { … }` and `target "sim" { … }`: where requests go. In a sim target every child
//! that is not a common target setting is a simulator setting, decoded through serde into
//! [`SimConfig`] so that fields the simulator adds are settable without touching this file.

use kdl::{KdlNode, KdlValue};
use serde_json::{Map, Value};

use super::ctx::{Ctx, NodeReader, Once, one_arg};
use super::error::suggest;
use super::model::{Endpoint, Target};
use super::written::Spanned;
use crate::protocol::{Api, CacheReset, ReasoningEffort, RequestSettings, RunSettings};
use crate::sim::SimConfig;

const COMMON: &[&str] = &[
    "api",
    "model",
    "api-key",
    "timeout",
    "header",
    "body",
    "ignore-eos",
    "reasoning-effort",
    "max-event-size",
    "cache-salt",
    "reset-cache",
    "batch",
    "stream",
];

pub(crate) fn default_target() -> Target {
    Target {
        endpoint: Endpoint::Sim(Box::default()),
        request: RequestSettings::default(),
        run: RunSettings::default(),
    }
}

/// The simulator's settings as written in KDL, read from its JSON Schema.
fn sim_fields() -> Vec<String> {
    let schema = schemars::schema_for!(SimConfig);
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| props.keys().cloned().collect())
        .unwrap_or_default()
}

pub(crate) fn parse(ctx: &mut Ctx<'_>, node: &KdlNode) -> Target {
    let mut t = default_target();
    let mut r = NodeReader::new(ctx, node);
    let has_arg = r.arg_count() > 0;
    let is_sim = endpoint_arg(ctx, node, &mut r, &mut t);
    let sim_fields = sim_fields();
    let mut sim = Map::new();
    let mut once = Once::default();
    let mut routing = super::route::Routing::default();
    let mut priority = super::priority_as::PriorityAs::default();
    for child in r.children() {
        let name = child.name().value();
        let repeatable = name == "header" || name == "url";
        if !repeatable && !once.first(ctx, child, "`target`") {
            continue;
        }
        if super::route::NAMES.contains(&name) {
            routing.read(ctx, child, &mut t);
        } else if super::priority_as::NAMES.contains(&name) {
            priority.read(ctx, child);
        } else if COMMON.contains(&name) {
            common_setting(ctx, child, &mut t, is_sim.then_some(&mut sim));
        } else if is_sim && sim_fields.iter().any(|f| f == name) {
            sim_setting(ctx, child, &mut sim);
        } else if is_sim {
            let mut known: Vec<&str> = COMMON.to_vec();
            known.extend(super::route::NAMES);
            known.extend(super::priority_as::NAMES);
            known.extend(sim_fields.iter().map(String::as_str));
            ctx.error(
                ctx.name_span(child),
                format!("unknown setting `{name}` in target \"sim\""),
                "not a target or simulator setting",
                Some(suggest(name, &known, "setting")),
            );
        } else if sim_fields.iter().any(|f| f == name) {
            ctx.error(
                ctx.name_span(child),
                format!("`{name}` is a simulator setting"),
                "only valid in target \"sim\"",
                Some("simulator settings apply to target \"sim\" only; remove it".into()),
            );
        } else {
            let mut known: Vec<&str> = COMMON.to_vec();
            known.extend(super::route::NAMES);
            known.extend(super::priority_as::NAMES);
            ctx.unknown_node(child, "`target`", &known);
        }
    }
    routing.finish(ctx, &mut t, has_arg);
    super::route::check_headers(ctx, node, &t);
    priority.finish(ctx, &mut t);
    api_defaults(ctx, r.children(), &mut t);
    r.finish(ctx);
    batch_fits_api(ctx, node, &t);
    if is_sim {
        // The in-process simulator reads the affinity header the target sends, unless the
        // scenario names another.
        if let Some(h) = &t.request.affinity_header {
            sim.entry("session-header")
                .or_insert_with(|| Value::String(h.clone()));
        }
        // And the priority header, likewise.
        if let Some(h) = &t.request.priority_header {
            sim.entry("request-priority-header")
                .or_insert_with(|| Value::String(h.clone()));
        }
        match serde_json::from_value::<SimConfig>(Value::Object(sim)) {
            Ok(cfg) => t.endpoint = Endpoint::Sim(Box::new(cfg)),
            // Each setting was checked on its own; a failure here is a cross-field one.
            Err(e) => ctx.error(
                ctx.name_span(node),
                "invalid simulator settings",
                e.to_string(),
                None,
            ),
        }
    }
    t
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

fn common_setting(
    ctx: &mut Ctx<'_>,
    child: &KdlNode,
    t: &mut Target,
    sim: Option<&mut Map<String, Value>>,
) {
    let mut r = NodeReader::new(ctx, child);
    match r.name() {
        "api" => api_setting(ctx, &mut r, t),
        "model" => {
            if let Some(v) = one_arg(ctx, &mut r, "a model name")
                && let Some(s) = ctx.name_string(&v, "model")
            {
                if let Some(sim) = sim {
                    sim.insert("model".into(), Value::String(s.clone()));
                }
                t.request.model = Some(s);
            }
        }
        "api-key" => api_key_setting(ctx, &mut r, t),
        "timeout" => {
            if let Some(v) = one_arg(ctx, &mut r, "a duration like \"60s\"")
                && let Some(d) = ctx.positive_duration(&v, "timeout")
            {
                t.request.timeout = d;
            }
        }
        "header" => header_setting(ctx, &mut r, t),
        "body" => body_setting(ctx, &mut r, t),
        "ignore-eos" => {
            t.request.ignore_eos = bool_setting(ctx, &mut r).unwrap_or(t.request.ignore_eos)
        }
        "reasoning-effort" => reasoning_effort_setting(ctx, &mut r, t),
        "stream" => t.request.stream = bool_setting(ctx, &mut r).unwrap_or(t.request.stream),
        "cache-salt" => t.run.cache_salt = bool_setting(ctx, &mut r).unwrap_or(t.run.cache_salt),
        "reset-cache" => reset_cache_setting(ctx, &mut r, t),
        "max-event-size" => max_event_size_setting(ctx, &mut r, t),
        "batch" => {
            if let Some(v) = one_arg(ctx, &mut r, "the inputs per request, e.g. 8")
                && let Some(n) = ctx.uint(&v, "batch", 1, MAX_BATCH)
            {
                t.request.batch = n as u32;
            }
        }
        // Only COMMON names are passed in.
        _ => {}
    }
    r.finish(ctx);
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
    let child = r.node;
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
                    t.request.api_key_env = Some(s);
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

/// `body { temperature 0.0 }`: extra JSON fields, each once, nested ones as blocks.
fn body_setting(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, t: &mut Target) {
    t.request.extra_body.extend(super::body::fields(ctx, r));
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
enum SizeError {
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
fn parse_size(text: &str) -> Result<u64, SizeError> {
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

/// A simulator setting: checked on its own against `SimConfig` so that an error points at it.
fn sim_setting(ctx: &mut Ctx<'_>, child: &KdlNode, sim: &mut Map<String, Value>) {
    let mut r = NodeReader::new(ctx, child);
    let name = r.name();
    let Some((value, span)) = node_json(ctx, &mut r) else {
        r.finish(ctx);
        return;
    };
    r.finish(ctx);
    let mut one = Map::new();
    one.insert(name.to_string(), value.clone());
    if let Err(e) = serde_json::from_value::<SimConfig>(Value::Object(one)) {
        ctx.error(
            span,
            format!("invalid simulator setting `{name}`"),
            number_as_string_error(name, &value).unwrap_or_else(|| e.to_string()),
            None,
        );
        return;
    }
    sim.insert(name.to_string(), value);
}

/// A number given where a string-typed setting is expected is most likely a duration without
/// its unit: the setting's own message for the number as text says so ("`8` has no unit").
fn number_as_string_error(name: &str, value: &Value) -> Option<String> {
    let Value::Number(n) = value else {
        return None;
    };
    let mut one = Map::new();
    one.insert(name.to_string(), Value::String(n.to_string()));
    serde_json::from_value::<SimConfig>(Value::Object(one))
        .err()
        .map(|e| e.to_string())
}

/// A node as JSON: one argument is a value, several an array, a children block an object.
fn node_json(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<(Value, miette::SourceSpan)> {
    let has_children = r.node.children().is_some();
    let args = r.args_from(ctx, 0);
    let span = args
        .first()
        .map_or_else(|| ctx.name_span(r.node), |v| v.span);
    if has_children && args.is_empty() {
        let mut obj = Map::new();
        for c in r.children() {
            let mut cr = NodeReader::new(ctx, c);
            if let Some((v, _)) = node_json(ctx, &mut cr) {
                obj.insert(cr.name().to_string(), v);
            }
            cr.finish(ctx);
        }
        return Some((Value::Object(obj), span));
    }
    let mut values = Vec::new();
    for a in &args {
        values.push(match &a.value {
            KdlValue::String(s) => Value::String(s.clone()),
            KdlValue::Bool(b) => Value::Bool(*b),
            KdlValue::Integer(i) => match i64::try_from(*i) {
                Ok(i) => Value::from(i),
                Err(_) => Value::from(*i as f64),
            },
            KdlValue::Float(f) => {
                serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
            }
            KdlValue::Null => Value::Null,
        });
    }
    match values.len() {
        0 => {
            if r.arg_count() == 0 {
                ctx.error(
                    span,
                    format!("`{}` needs a value", r.name()),
                    "missing value",
                    None,
                );
            }
            None
        }
        1 => values.pop().map(|v| (v, span)),
        _ => Some((Value::Array(values), span)),
    }
}
