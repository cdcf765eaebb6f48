//! `dataset "name" { synthetic { input-tokens …; output-tokens … } }`: its one source
//! (`synthetic` here, the others in `workload.rs`) and what modifies its prompts; the length
//! distributions are `lengths.rs`'s.

use std::path::PathBuf;

use kdl::KdlNode;

use super::ctx::{Ctx, NodeReader, Once};
use super::lengths::{Length, Written, missing};
use super::model::{Dataset, DatasetKind, SyntheticSpec};
use super::settings::{Block, Setting, find, names, read_children};
use super::workload;
use super::written::Spanned;
use crate::dataset::{ContextSpec, LengthDist};

/// The synthetic source (the file-backed ones are [`workload::FILE_KINDS`]); a data set has
/// exactly one source, judged here.
const SYNTHETIC: &[Setting<Block<DatasetRead>>] = &[Setting::many("synthetic", |ctx, node, st| {
    if st.first_source(ctx, node) {
        st.kind = synthetic(ctx, node, st.generates).map(DatasetKind::Synthetic);
    }
})];
/// What a data set's requests carry besides their prompts (the other modifiers are
/// [`workload::MODIFIERS`]).
const PARTS: &[Setting<Block<DatasetRead>>] = &[
    Setting::once("session", |ctx, node, st| {
        st.session = super::session::parse(ctx, node);
        st.modifiers_ok &= st.session.is_some();
    }),
    Setting::once("images", |ctx, node, st| {
        st.images = super::images::parse(ctx, node);
        st.modifiers_ok &= st.images.is_some();
    }),
    Setting::once("quality", |ctx, node, st| {
        st.quality = super::quality::parse(ctx, node);
        st.modifiers_ok &= st.quality.is_some();
    }),
];

/// The lengths of a `synthetic` source.
const SYNTHETIC_LENGTHS: &[Setting<Length<SyntheticLengths>>] = &[
    Setting::once("input-tokens", Length::required(|l| &mut l.input)),
    Setting::once("output-tokens", Length::required(|l| &mut l.output)),
];

#[derive(Default)]
struct SyntheticLengths {
    input: Written,
    output: Written,
}

/// A data set as its children are read.
struct DatasetRead {
    /// The target's API generates output.
    generates: bool,
    saw_source: bool,
    kind: Option<DatasetKind>,
    context: ContextSpec,
    hooks: Option<Spanned<PathBuf>>,
    session: Option<super::session::SessionSpec>,
    images: Option<crate::dataset::ImageSpec>,
    quality: Option<crate::dataset::QualitySpec>,
    /// No modifier (nor session, nor images) was invalid.
    modifiers_ok: bool,
    once: Once,
}

impl DatasetRead {
    /// Whether `node` is the data set's first source; a second is reported.
    fn first_source(&mut self, ctx: &mut Ctx<'_>, node: &KdlNode) -> bool {
        if self.saw_source {
            ctx.error(
                ctx.name_span(node),
                "a dataset has exactly one source",
                "second source",
                Some("declare another dataset for it".into()),
            );
            return false;
        }
        self.saw_source = true;
        true
    }

    fn child(&mut self, ctx: &mut Ctx<'_>, child: &KdlNode) {
        let name = child.name().value();
        if find(&[workload::FILE_KINDS], name).is_some() {
            if self.first_source(ctx, child) {
                self.kind = workload::source(ctx, child);
            }
        } else if find(&[workload::MODIFIERS], name).is_some() {
            if self.once.first(ctx, child, "`dataset`") {
                self.modifiers_ok &=
                    workload::modifier(ctx, child, &mut self.context, &mut self.hooks);
            }
        } else if let Some(setting) = find(&[SYNTHETIC, PARTS], name) {
            if setting.many || self.once.first(ctx, child, "`dataset`") {
                (setting.read)(ctx, child, self);
            }
        } else {
            // Listed as a user reads them: the sources, then what modifies them.
            let mut known = names(&[SYNTHETIC]);
            known.extend(names(&[workload::FILE_KINDS]));
            known.extend(names(&[workload::MODIFIERS]));
            known.extend(names(&[PARTS]));
            ctx.unknown_node(child, "`dataset`", &known);
        }
    }
}

/// The dataset's name (even when its body is invalid, so that references to it are not
/// reported too) and the dataset when it is valid. `generates`: the target's API generates
/// output (else a synthetic data set needs no `output-tokens`).
pub(crate) fn parse(
    ctx: &mut Ctx<'_>,
    node: &KdlNode,
    generates: bool,
) -> (Option<Spanned<String>>, Option<Dataset>) {
    let mut r = NodeReader::new(ctx, node);
    let name = dataset_name(ctx, &mut r);
    let mut st = DatasetRead {
        generates,
        saw_source: false,
        kind: None,
        context: ContextSpec::default(),
        hooks: None,
        session: None,
        images: None,
        quality: None,
        modifiers_ok: true,
        once: Once::default(),
    };
    for child in r.children() {
        st.child(ctx, child);
    }
    if !st.saw_source {
        ctx.error(
            ctx.name_span(node),
            "dataset without a source",
            "needs a source block",
            Some("add e.g. synthetic { input-tokens 128; output-tokens 64 }".into()),
        );
    }
    r.finish(ctx);
    let dataset = match (&name, st.kind) {
        (Some(name), Some(kind)) if st.modifiers_ok => Some(Dataset {
            name: name.clone(),
            kind,
            context: st.context,
            hooks: st.hooks,
            session: st.session,
            images: st.images,
            quality: st.quality,
        }),
        _ => None,
    };
    (name, dataset)
}

/// The dataset's name argument, reported when missing.
fn dataset_name(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<Spanned<String>> {
    match r.arg(ctx, 0) {
        Some(v) => ctx
            .name_string(&v, "dataset name")
            .map(|s| Spanned::new(s, v.span)),
        None => {
            if r.arg_count() == 0 {
                ctx.error(
                    ctx.name_span(r.node),
                    "`dataset` needs a name",
                    "missing name",
                    Some("write dataset \"short\" { synthetic { … } }".into()),
                );
            }
            None
        }
    }
}

fn synthetic(ctx: &mut Ctx<'_>, node: &KdlNode, generates: bool) -> Option<SyntheticSpec> {
    let mut r = NodeReader::new(ctx, node);
    let mut lengths = SyntheticLengths::default();
    read_children(
        ctx,
        r.children(),
        "`synthetic`",
        &[SYNTHETIC_LENGTHS],
        &mut lengths,
    );
    if !generates && lengths.output.is_none() {
        // A pooling API generates nothing: no length to ask for.
        lengths.output = Some(Some(Spanned::new(
            LengthDist::Fixed { value: 1 },
            ctx.name_span(node),
        )));
    }
    for name in missing(SYNTHETIC_LENGTHS, &mut lengths) {
        ctx.error(
            ctx.name_span(node),
            format!("`synthetic` without `{name}`"),
            format!("missing `{name}`"),
            Some(format!(
                "add e.g. {name} 128 or {name} \"uniform\" min=32 max=256"
            )),
        );
    }
    r.finish(ctx);
    Some(SyntheticSpec {
        input_tokens: lengths.input.flatten()?,
        output_tokens: lengths.output.flatten()?,
    })
}
