//! The `telemetry { … }` block: sampling interval and sources (`nvml`, `prometheus URL`), the
//! requests' trace context (`trace-context`), OTLP export (`otlp URL`) and receipt
//! (`otlp-receive ADDR`),
//! decoded into [`TelemetryConfig`]. A Prometheus URL may be `"sim"`, meaning the in-process
//! simulator's own `/metrics`; that only makes sense with `target "sim"`, checked once the
//! whole file is read ([`check_sim_refs`]).

use kdl::{KdlNode, KdlValue};
use miette::SourceSpan;

use super::ctx::{Ctx, NodeReader, one_arg};
use super::error::suggest;
use super::model::{Endpoint, Target};
use super::settings::{Entries, Setting, find, read_children};
use crate::telemetry::{
    MetricsUrl, OtlpExport, OtlpReceive, PrometheusKind, SourceConfig, TelemetryConfig,
    default_wait,
};

/// The block's settings.
const SETTINGS: &[Setting<Entries<TelemetryRead>>] = &[Setting::once("interval", |ctx, r, st| {
    if let Some(d) = one_arg(ctx, r, "a duration like \"1s\"")
        .and_then(|v| ctx.positive_duration(&v, "interval"))
    {
        st.out.config.interval = d;
    }
})];
/// The children that give the block something to do.
const SOURCES: &[Setting<Entries<TelemetryRead>>] = &[
    // One `nvml` lists every GPU: a second is reported here, with that hint.
    Setting::many("nvml", |ctx, r, st| {
        if st.nvml_seen {
            ctx.error(
                ctx.name_span(r.node),
                "duplicate `nvml` in `telemetry`",
                "given again here",
                Some("list every GPU in one source: nvml devices=\"0,1\"".into()),
            );
            r.skip_all();
        } else if let Some(s) = nvml(ctx, r) {
            st.out.config.sources.push(s);
        }
        st.nvml_seen = true;
    }),
    Setting::many("prometheus", |ctx, r, st| {
        if let Some((s, sim_span)) = prometheus(ctx, r) {
            st.out.sim_refs.extend(sim_span);
            st.out.config.sources.push(s);
        }
    }),
    Setting::once("trace-context", |ctx, r, st| {
        let on = one_arg(ctx, r, "#true or #false").and_then(|v| ctx.boolean(&v, "trace-context"));
        st.out.config.trace_context = on.unwrap_or(true);
    }),
    Setting::once("otlp", |ctx, r, st| st.out.config.otlp = otlp(ctx, r)),
    Setting::once("otlp-receive", |ctx, r, st| {
        st.out.config.otlp_receive = otlp_receive(ctx, r);
    }),
];
const KINDS: &[&str] = &["vllm", "sglang", "llama-cpp", "dcgm-exporter"];

/// What the block says, plus where `prometheus "sim"` was written.
pub(crate) struct TelemetryOut {
    pub config: TelemetryConfig,
    pub sim_refs: Vec<SourceSpan>,
}

/// The block as it is read.
struct TelemetryRead {
    out: TelemetryOut,
    nvml_seen: bool,
}

pub(crate) fn parse(ctx: &mut Ctx<'_>, node: &KdlNode) -> TelemetryOut {
    let mut r = NodeReader::new(ctx, node);
    let mut st = TelemetryRead {
        out: TelemetryOut {
            config: TelemetryConfig::default(),
            sim_refs: Vec::new(),
        },
        nvml_seen: false,
    };
    read_children(
        ctx,
        r.children(),
        "`telemetry`",
        &[SETTINGS, SOURCES],
        &mut st,
    );
    r.finish(ctx);
    check_block(ctx, node, &st.out.config);
    st.out
}

/// What the block as a whole must hold: something to do, and trace context for spans.
fn check_block(ctx: &mut Ctx<'_>, node: &KdlNode, config: &TelemetryConfig) {
    if !config.trace_context && (config.otlp.is_some() || config.otlp_receive.is_some()) {
        ctx.error(
            ctx.name_span(node),
            "`otlp` and `otlp-receive` need trace context",
            "`trace-context #false` here",
            Some(
                "spans are keyed by the requests' trace ids: remove `trace-context #false`".into(),
            ),
        );
    }
    let has_source = node.children().is_some_and(|c| {
        c.nodes()
            .iter()
            .any(|n| find(&[SOURCES], n.name().value()).is_some())
    });
    if !has_source {
        ctx.error(
            ctx.name_span(node),
            "`telemetry` has no source",
            "needs `nvml`, `prometheus \"URL\"`, `otlp`, `otlp-receive` or `trace-context`",
            Some("write e.g. telemetry { nvml; prometheus \"sim\" }".into()),
        );
    }
}

fn required(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> bool {
    r.prop(ctx, "required")
        .and_then(|v| ctx.boolean(&v, "required"))
        .unwrap_or(false)
}

/// `nvml [devices=0 | devices="0,1"] [required=#true]`.
fn nvml(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<SourceConfig> {
    let devices = match r.prop(ctx, "devices") {
        None => None,
        Some(v) => match &v.value {
            KdlValue::Integer(_) => Some(vec![ctx.uint(&v, "devices", 0, u32::MAX as u64)? as u32]),
            KdlValue::String(s) => {
                let parsed: Result<Vec<u32>, _> = s
                    .split([',', ' '])
                    .filter(|p| !p.is_empty())
                    .map(|p| p.trim().parse::<u32>())
                    .collect();
                match parsed {
                    Ok(list) if !list.is_empty() => Some(list),
                    _ => {
                        ctx.error(
                            v.span,
                            "invalid `devices` for `nvml`",
                            format!("expected GPU indices, got {}", v.shown()),
                            Some("write devices=0 or devices=\"0,1\"".into()),
                        );
                        return None;
                    }
                }
            }
            _ => {
                ctx.error(
                    v.span,
                    "wrong type for `devices`",
                    format!(
                        "expected a GPU index or a list like \"0,1\", got {}",
                        v.shown()
                    ),
                    None,
                );
                return None;
            }
        },
    };
    let required = required(ctx, r);
    Some(SourceConfig::Nvml { devices, required })
}

/// `prometheus "URL" [kind="vllm"] [required=#true]`; the URL may be `"sim"`.
fn prometheus(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
) -> Option<(SourceConfig, Option<SourceSpan>)> {
    let url_val = one_arg(ctx, r, "the metrics URL, e.g. \"http://host:8000/metrics\"");
    let kind = match r.prop(ctx, "kind") {
        None => None,
        Some(v) => {
            let k = ctx.name_string(&v, "kind")?;
            match serde_json::from_value::<PrometheusKind>(serde_json::Value::String(k.clone())) {
                Ok(k) => Some(k),
                Err(_) => {
                    ctx.error(
                        v.span,
                        format!("unknown Prometheus kind `{k}`"),
                        "not a known server kind",
                        Some(suggest(&k, KINDS, "kind")),
                    );
                    return None;
                }
            }
        }
    };
    let required = required(ctx, r);
    let url_val = url_val?;
    let url = ctx.name_string(&url_val, "prometheus")?;
    let mut sim_span = None;
    if url == MetricsUrl::SIM {
        sim_span = Some(url_val.span);
    } else if !(url.starts_with("http://") || url.starts_with("https://")) {
        ctx.error(
            url_val.span,
            format!("invalid Prometheus URL `{url}`"),
            "expected an http:// or https:// URL",
            Some(
                "write e.g. prometheus \"http://127.0.0.1:8000/metrics\", or \"sim\" for the \
                 embedded simulator"
                    .into(),
            ),
        );
        return None;
    }
    Some((
        SourceConfig::Prometheus {
            url: url.into(),
            required,
            kind,
        },
        sim_span,
    ))
}

/// `otlp "http://collector:4318"`: an http(s) URL.
fn otlp(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<OtlpExport> {
    let v = one_arg(
        ctx,
        r,
        "the collector's URL, e.g. \"http://127.0.0.1:4318\"",
    )?;
    let url = ctx.string(&v, "otlp")?;
    let parsed = url::Url::parse(&url).ok();
    if !parsed.is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some()) {
        ctx.error(
            v.span,
            "invalid OTLP URL",
            "expected an http:// or https:// URL",
            Some("write e.g. otlp \"http://127.0.0.1:4318\" (spans go to its /v1/traces)".into()),
        );
        return None;
    }
    Some(OtlpExport { url })
}

/// `otlp-receive "127.0.0.1:4318" [wait="12s"]`: a socket address to listen on.
fn otlp_receive(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<OtlpReceive> {
    let v = one_arg(ctx, r, "an address to listen on, e.g. \"127.0.0.1:4318\"");
    let wait = match r.prop(ctx, "wait") {
        Some(w) => ctx.duration(&w, "wait")?,
        None => default_wait(),
    };
    let v = v?;
    let listen = ctx.string(&v, "otlp-receive")?;
    if listen.parse::<std::net::SocketAddr>().is_err() {
        ctx.error(
            v.span,
            "invalid address for `otlp-receive`",
            "expected IP:PORT",
            Some("write e.g. otlp-receive \"127.0.0.1:4318\" (port 0 picks a free one)".into()),
        );
        return None;
    }
    Some(OtlpReceive { listen, wait })
}

/// An SLA on a telemetry reading (`kv_cache.max`, `gpu.power.mean`, …) needs a source that
/// samples it: without one the run could only end with the assertion undecided.
pub(crate) fn check_sources(ctx: &mut Ctx<'_>, s: &super::model::Scenario) {
    if s.telemetry.as_ref().is_some_and(|t| !t.sources.is_empty()) {
        return;
    }
    let source = if matches!(s.target.endpoint, Endpoint::Sim(_)) {
        "prometheus \"sim\""
    } else {
        "prometheus \"http://host:8000/metrics\" (or nvml for the GPU readings)"
    };
    use crate::metrics::TelemetryMetric as T;
    // Speculative decoding's figures also come in the responses (`timings`, usage).
    let sampled = |m: crate::sla::Metric| {
        m.is_telemetry()
            && !matches!(
                m,
                crate::sla::Metric::Telemetry(T::SpecAcceptanceRate | T::SpecAcceptanceLength)
            )
    };
    for a in s.sla.iter().filter(|a| sampled(a.expr.value.metric)) {
        let metric = a.expr.value.metric;
        ctx.error(
            a.expr.span,
            format!("`{metric}` is a telemetry reading, and no telemetry source samples it"),
            "nothing in this scenario measures it",
            Some(format!(
                "add a source: telemetry {{ {source} }} (docs/telemetry.md)"
            )),
        );
    }
}

/// `prometheus "sim"` needs the embedded simulator as the target.
pub(crate) fn check_sim_refs(ctx: &mut Ctx<'_>, target: &Target, refs: &[SourceSpan]) {
    if matches!(target.endpoint, Endpoint::Sim(_)) {
        return;
    }
    for span in refs {
        ctx.error(
            *span,
            "`prometheus \"sim\"` without the simulator target",
            "the target is not the embedded simulator",
            Some("give the server's metrics URL, e.g. \"http://host:8000/metrics\"".into()),
        );
    }
}
