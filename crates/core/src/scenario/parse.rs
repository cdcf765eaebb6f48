//! The entry points [`load`] and [`parse_str`]: KDL syntax, then params, then every top-level
//! node, then the cross-references (stage → dataset, sla → stage). Problems are collected all
//! along and returned together, sorted by position.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use kdl::{KdlDocument, KdlNode};
use miette::SourceSpan;

use super::ctx::{Ctx, NodeReader, Once, one_arg};
use super::error::{MAX_PROBLEMS, ScenarioError, did_you_mean};
use super::model::{GoodputSpec, ReportSpec, Scenario, Source};
use super::refs::{check_refs, unique};
use super::report::report;
use super::settings::{Block, Entries, Setting, find, names, read_children, with_reader};
use super::syntax::Unparsed;
use super::unparsed::unparsed_errors;
use super::written::Spanned;
use super::{dataset, params, sla_block, stage, target, telemetry, warmup};
use crate::dataset::TokenizerSpec;

/// The top-level nodes. `param`s are read before the rest (by `params::collect`), so that
/// every value may use them; here they only need to be known.
const TOP: &[Setting<Block<TopLevel>>] = &[
    Setting::once("scenario", |ctx, node, top| {
        top.anchor = Some(ctx.name_span(node));
        meta(ctx, node, &mut top.s);
    }),
    Setting::many("param", |_, _, _| {}),
    Setting::once("target", |ctx, node, top| {
        top.s.target = target::parse(ctx, node)
    }),
    Setting::once("tokenizer", |ctx, node, top| {
        if let Some(t) = tokenizer(ctx, node) {
            top.s.tokenizer = t;
        }
    }),
    Setting::many("dataset", TopLevel::dataset),
    Setting::once("warmup", |ctx, node, top| {
        top.s.warmup = warmup::warmup(ctx, node)
    }),
    Setting::many("stage", TopLevel::stage),
    Setting::many("sla", |ctx, node, top| {
        let out = sla_block::sla_block(ctx, node, None);
        top.s.sla.extend(out.assertions);
        merge_policy(&mut top.s.sla_policy, out.policy);
    }),
    Setting::once("goodput", |ctx, node, top| {
        top.s.goodput = goodput(ctx, node);
        if !top.generates || top.whole {
            streamed_goodput(ctx, node, top.s.goodput.as_ref());
        }
    }),
    Setting::once("report", |ctx, node, top| top.s.report = report(ctx, node)),
    Setting::once("server", |ctx, node, top| {
        top.s.server = super::server::parse(ctx, node)
    }),
    Setting::once("infra", |ctx, node, top| {
        top.s.infra = super::infra::parse(ctx, node)
    }),
    Setting::once("telemetry", |ctx, node, top| {
        let out = telemetry::parse(ctx, node);
        top.sim_metric_refs = out.sim_refs;
        top.s.telemetry = Some(out.config);
    }),
    Setting::once("mlperf", |ctx, node, top| {
        top.s.mlperf = super::mlperf::parse(ctx, node)
    }),
    Setting::once("rounds", |ctx, node, top| {
        with_reader(ctx, node, |ctx, r| {
            if let Some(n) = one_arg(ctx, r, "a number of rounds")
                .and_then(|v| ctx.uint(&v, "rounds", 1, stage::MAX_ROUNDS))
            {
                top.s.rounds = n as u32;
            }
        });
    }),
];

/// Reads and parses a scenario file. `params` are `--param NAME=VALUE` overrides.
pub fn load(path: &Path, params: &[(String, String)]) -> Result<Scenario, ScenarioError> {
    let text = crate::files::read_text(path, crate::files::MAX_TEXT_FILE).map_err(|source| {
        ScenarioError::Io {
            path: path.to_path_buf(),
            source,
        }
    })?;
    parse_str(path, &text, params)
}

/// Parses scenario text; `path` names the file in diagnostics and anchors relative paths.
pub fn parse_str(
    path: &Path,
    text: &str,
    params: &[(String, String)],
) -> Result<Scenario, ScenarioError> {
    let source = Source {
        path: path.to_path_buf(),
        text: Arc::from(text),
    };
    let mut ctx = Ctx::new(text, source.named());
    ctx.base_dir = Some(source.base_dir());
    ctx.top_level = names(&[TOP]);
    // The lexer's verdict points at the `{`; the parse's own bounds hold whatever it says.
    let parsed = match super::depth::too_deep(text) {
        Some(at) => Err(Unparsed::TooDeep(SourceSpan::new(at.into(), 1))),
        None => super::syntax::parse(text),
    };
    let scenario = match parsed {
        Ok(doc) => decode(&mut ctx, &doc, params, source),
        Err(unparsed) => {
            unparsed_errors(&mut ctx, unparsed);
            None
        }
    };
    match scenario {
        Some(s) if ctx.problems.is_empty() => Ok(s),
        _ => {
            let mut problems = ctx.problems;
            problems.sort_by_key(|p| p.span.map_or(0, |s| s.offset()));
            if problems.len() > MAX_PROBLEMS {
                let more = problems.len() - MAX_PROBLEMS + 1;
                problems.truncate(MAX_PROBLEMS - 1);
                let mut last = problems[0].clone();
                last.message = format!("… and {more} more problems");
                last.span = None;
                last.label = String::new();
                last.help = Some("fix the ones above first; is this the right file?".into());
                problems.push(last);
            }
            Err(ScenarioError::Invalid {
                path: path.to_path_buf(),
                problems,
            })
        }
    }
}

fn decode(
    ctx: &mut Ctx<'_>,
    doc: &KdlDocument,
    overrides: &[(String, String)],
    source: Source,
) -> Option<Scenario> {
    let nodes = doc.nodes();
    params::collect(ctx, nodes, overrides);
    let mut top = TopLevel {
        s: empty_scenario(ctx, source),
        once: Once::default(),
        dataset_names: BTreeMap::new(),
        stage_names: BTreeMap::new(),
        dataset_refs: Vec::new(),
        anchor: None,
        sim_metric_refs: Vec::new(),
        // A data set is read knowing its target's API, wherever the target is written.
        generates: written_api(ctx, nodes).is_none_or(|a| a.kind().answer().streams()),
        whole: written_whole(ctx, nodes),
    };
    for node in nodes {
        if let Some(setting) = top.admit(ctx, node) {
            (setting.read)(ctx, node, &mut top);
        }
    }
    Some(top.check(ctx, nodes))
}

/// The scenario before its nodes are read: every default, named after its file.
fn empty_scenario(ctx: &Ctx<'_>, source: Source) -> Scenario {
    let default_name = source.path.file_stem().map_or_else(
        || "scenario".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    Scenario {
        source,
        name: default_name,
        description: None,
        seed: 0,
        tags: Vec::new(),
        params: ctx
            .params
            .iter()
            .map(|(k, d)| (k.clone(), d.value.clone()))
            .collect(),
        target: target::default_target(),
        tokenizer: TokenizerSpec::default(),
        datasets: Vec::new(),
        warmup: None,
        stages: Vec::new(),
        sla: Vec::new(),
        sla_policy: Default::default(),
        rounds: 1,
        goodput: None,
        report: ReportSpec::default(),
        telemetry: None,
        server: None,
        infra: Vec::new(),
        mlperf: None,
    }
}

/// The scenario as its top-level nodes are read, and what they gather for the checks across
/// them (names declared and referred to), which can run only once every node is read.
struct TopLevel {
    s: Scenario,
    once: Once,
    dataset_names: BTreeMap<String, SourceSpan>,
    stage_names: BTreeMap<String, SourceSpan>,
    dataset_refs: Vec<Spanned<String>>,
    /// Where a problem of the whole scenario is shown: its `scenario` node, else its first.
    anchor: Option<SourceSpan>,
    sim_metric_refs: Vec<SourceSpan>,
    /// The target's API generates output (else a synthetic data set needs no
    /// `output-tokens`).
    generates: bool,
    /// The target asks for whole answers (`stream #false`): no first token either.
    whole: bool,
}

impl TopLevel {
    /// How `node` is to be read, if it is: a known top-level node, and the first of its name
    /// where only one may be.
    fn admit(
        &mut self,
        ctx: &mut Ctx<'_>,
        node: &KdlNode,
    ) -> Option<&'static Setting<Block<TopLevel>>> {
        self.anchor.get_or_insert(ctx.name_span(node));
        let Some(setting) = find(&[TOP], node.name().value()) else {
            ctx.unknown_node(node, "the scenario", &names(&[TOP]));
            return None;
        };
        (setting.many || self.once.first(ctx, node, "the scenario")).then_some(setting)
    }

    fn dataset(ctx: &mut Ctx<'_>, node: &KdlNode, top: &mut TopLevel) {
        let (name, ds) = dataset::parse(ctx, node, top.generates);
        if let Some(n) = name
            && unique(ctx, &mut top.dataset_names, &n, "dataset")
            && let Some(ds) = ds
        {
            top.s.datasets.push(ds);
        }
    }

    fn stage(ctx: &mut Ctx<'_>, node: &KdlNode, top: &mut TopLevel) {
        let out = stage::parse(ctx, node);
        top.s.sla.extend(out.sla);
        top.dataset_refs.extend(out.dataset);
        if let Some(n) = out.name
            && unique(ctx, &mut top.stage_names, &n, "stage")
            && let Some(st) = out.stage
        {
            top.s.stages.push(st);
        }
    }

    /// The checks across nodes: a stage exists, and every name referred to is declared.
    fn check(self, ctx: &mut Ctx<'_>, nodes: &[KdlNode]) -> Scenario {
        let mut s = self.s;
        super::mlperf::apply(ctx, &mut s, &self.stage_names);
        let mut dataset_refs = self.dataset_refs;
        if self.stage_names.is_empty() && !nodes.iter().any(|n| n.name().value() == "stage") {
            ctx.error(
                self.anchor.unwrap_or_else(|| SourceSpan::new(0.into(), 0)),
                "the scenario has no stage",
                "at least one `stage` is needed",
                Some("add e.g. stage \"steady\" { dataset \"NAME\"; arrival \"poisson\" rate=10; duration \"60s\" }".into()),
            );
        }
        if let Some(d) = s.warmup.as_ref().and_then(|w| w.dataset.clone()) {
            dataset_refs.push(d);
        }
        check_refs(
            ctx,
            &s,
            &dataset_refs,
            &self.dataset_names,
            &self.stage_names,
        );
        super::until::check_scenario(ctx, &s);
        super::labels::check_selectors(ctx, &s);
        telemetry::check_sim_refs(ctx, &s.target, &self.sim_metric_refs);
        telemetry::check_sources(ctx, &s);
        super::session_state::check_state(ctx, nodes, &s.target);
        super::server::check(ctx, nodes, &s);
        s
    }
}

fn merge_policy(into: &mut super::model::SlaPolicySpec, from: super::model::SlaPolicySpec) {
    into.confidence = from.confidence.or(into.confidence);
    into.inconclusive = from.inconclusive.or(into.inconclusive);
    into.untrusted = from.untrusted.or(into.untrusted);
    into.abort_min_samples = from.abort_min_samples.or(into.abort_min_samples);
    into.abort_grace = from.abort_grace.or(into.abort_grace);
}

/// A goodput SLO on TTFT, TPOT or ITL for a pooling API, whose answers come whole: no request
/// could meet it.
fn streamed_goodput(ctx: &mut Ctx<'_>, node: &KdlNode, g: Option<&GoodputSpec>) {
    let Some(g) = g else { return };
    if g.ttft.is_none() && g.tpot.is_none() && g.itl.is_none() {
        return;
    }
    ctx.error(
        ctx.name_span(node),
        "`goodput` sets an SLO no answer that comes whole can meet",
        "a pooling API's answers, and `stream #false` ones, come whole: no TTFT, TPOT or ITL",
        Some("use e2e= only, e.g. goodput e2e=\"500ms\"".into()),
    );
}

/// Whether the target writes `stream #false` (wherever it is written).
fn written_whole(ctx: &Ctx<'_>, nodes: &[KdlNode]) -> bool {
    target_entry(ctx, nodes, "stream").and_then(|v| v.as_bool()) == Some(false)
}

/// The API the target names, wherever the target is written (a data set may come first).
fn written_api(ctx: &Ctx<'_>, nodes: &[KdlNode]) -> Option<crate::protocol::Api> {
    let api = target_entry(ctx, nodes, "api")?;
    crate::protocol::Api::from_name(api.as_string()?)
}

/// The first value of the target's child `name`, read ahead of the target itself: a
/// `(param)"NAME"` reference is its param's value, as the target's own reading will take it
/// (an unknown param is reported there, not here).
fn target_entry(ctx: &Ctx<'_>, nodes: &[KdlNode], name: &str) -> Option<kdl::KdlValue> {
    let target = nodes.iter().find(|n| n.name().value() == "target")?;
    let node = target
        .children()?
        .nodes()
        .iter()
        .find(|n| n.name().value() == name)?;
    let entry = node.entries().first()?;
    match entry.ty() {
        Some(ty) if ty.value() == "param" => {
            let decl = ctx.params.get(entry.value().as_string()?)?;
            Some(super::ctx::param_to_kdl(&decl.value))
        }
        _ => Some(entry.value().clone()),
    }
}

/// The children of `scenario "name" { … }`.
const META: &[Setting<Entries<Scenario>>] = &[
    Setting::once("description", |ctx, r, s| {
        s.description = one_arg(ctx, r, "a string").and_then(|v| ctx.string(&v, r.name()));
    }),
    Setting::once("seed", |ctx, r, s| {
        if let Some(seed) =
            one_arg(ctx, r, "a whole number ≥ 0").and_then(|v| ctx.uint(&v, r.name(), 0, u64::MAX))
        {
            s.seed = seed;
        }
    }),
    Setting::once("tags", |ctx, r, s| {
        for v in r.args_from(ctx, 0) {
            if let Some(t) = ctx.name_string(&v, "tag") {
                s.tags.push(t);
            }
        }
    }),
];

fn meta(ctx: &mut Ctx<'_>, node: &KdlNode, s: &mut Scenario) {
    let mut r = NodeReader::new(ctx, node);
    if let Some(n) =
        one_arg(ctx, &mut r, "the scenario's name").and_then(|v| ctx.name_string(&v, "scenario"))
    {
        s.name = n;
    }
    read_children(ctx, r.children(), "`scenario`", &[META], s);
    r.finish(ctx);
}

/// The tokenizers built in, by name.
const TOKENIZERS: [(&str, TokenizerSpec); 2] = [
    ("cl100k_base", TokenizerSpec::Cl100kBase),
    ("o200k_base", TokenizerSpec::O200kBase),
];

fn tokenizer(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<TokenizerSpec> {
    let built_in = TOKENIZERS.map(|(name, _)| format!("\"{name}\"")).join(", ");
    let mut r = NodeReader::new(ctx, node);
    let v = one_arg(ctx, &mut r, &format!("{built_in} or a tokenizer.json path"));
    r.finish(ctx);
    let v = v?;
    let name = ctx.name_string(&v, "tokenizer")?;
    if let Some((_, spec)) = TOKENIZERS.iter().find(|(n, _)| *n == name) {
        return Some(spec.clone());
    }
    if name.ends_with(".json") || name.contains(['/', '\\']) {
        return ctx
            .regular_file(&name, v.span, "`tokenizer`")
            .then(|| TokenizerSpec::File(name.into()));
    }
    let help = match did_you_mean(&name, TOKENIZERS.iter().map(|(n, _)| *n)) {
        Some(m) => format!("did you mean `{m}`?"),
        None => format!("use {built_in} or a path to a tokenizer.json"),
    };
    ctx.error(
        v.span,
        format!("unknown tokenizer `{name}`"),
        "not a known tokenizer or a .json path",
        Some(help),
    );
    None
}

fn goodput(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<GoodputSpec> {
    let mut r = NodeReader::new(ctx, node);
    let mut g = GoodputSpec::default();
    let mut any = false;
    for (key, slot) in [
        ("ttft", &mut g.ttft),
        ("tpot", &mut g.tpot),
        ("itl", &mut g.itl),
        ("e2e", &mut g.e2e),
    ] {
        if let Some(v) = r.prop(ctx, key) {
            any = true;
            *slot = ctx.positive_duration(&v, key);
        }
    }
    if !any && node.entries().iter().all(|e| e.name().is_none()) {
        ctx.error(
            ctx.name_span(node),
            "`goodput` sets no SLO",
            "needs at least one of ttft=, tpot=, itl=, e2e=",
            Some("write e.g. goodput ttft=\"200ms\" tpot=\"50ms\"".into()),
        );
    }
    r.finish(ctx);
    Some(g)
}
