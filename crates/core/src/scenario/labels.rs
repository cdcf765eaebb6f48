//! A stage's splits of its requests: `model "lora-sql" weight=1` (the model or adapter each
//! request names) and `class "interactive" weight=1 priority=0 { dataset "chat"; sla { … } }`
//! (traffic classes, each with its share, the priority the server is told, its own data set
//! and its own assertions, which become the stage's assertions on `[class=NAME]`).

use kdl::KdlNode;

use super::ctx::{Ctx, NodeReader, one_arg};
use super::model::{AssertionSpec, GroupSpec, LabelSpec};
use super::settings::{Setting, find, names, with_reader};
use super::written::Spanned;
use crate::protocol::{Grouping, LabelRef, MAX_LABEL_LEN, valid_label};

/// Largest weight: shares are relative, and a sum of them must not overflow.
const MAX_WEIGHT: u64 = 1_000_000;
/// Most labels in one grouping of a stage: each keeps its own histograms.
pub(crate) const MAX_LABELS: usize = 64;
/// vLLM takes any integer; this bounds it to what a JSON number carries exactly.
const MAX_PRIORITY: i64 = 1 << 53;

/// What the `model` and `class` nodes of one stage yield.
#[derive(Default)]
pub(crate) struct Split {
    pub groups: Vec<GroupSpec>,
    /// The classes' own assertions, on their labels.
    pub sla: Vec<AssertionSpec>,
    /// The classes' own data sets, for the reference check.
    pub datasets: Vec<Spanned<String>>,
    /// `priority-inversion "fail"`.
    pub priority_gate: bool,
}

impl Split {
    /// Reads one `model` or `class` node; the label it names, when valid (whose `sla`
    /// blocks the stage reads, then gives to [`Split::own_sla`]).
    pub fn read(&mut self, ctx: &mut Ctx<'_>, node: &KdlNode, by: Grouping) -> Option<LabelRef> {
        let label = self.label(ctx, node, by)?;
        let on = LabelRef {
            by,
            name: label.name.value.clone(),
        };
        let at = match self.groups.iter().position(|g| g.by == by) {
            Some(i) => i,
            None => {
                self.groups.push(GroupSpec {
                    by,
                    labels: Vec::new(),
                });
                self.groups.len() - 1
            }
        };
        let group = &mut self.groups[at];
        if group
            .labels
            .iter()
            .any(|l| l.name.value == label.name.value)
        {
            ctx.error(
                label.name.span,
                format!("duplicate {by} `{}` in the stage", label.name.value),
                "given again here",
                Some(format!("give each {by} once; its weight sets its share")),
            );
            return None;
        }
        if group.labels.len() >= MAX_LABELS {
            ctx.error(
                label.name.span,
                format!("more than {MAX_LABELS} {by}s in one stage"),
                "too many",
                Some("each keeps its own histograms; merge some".into()),
            );
            return None;
        }
        group.labels.push(label);
        Some(on)
    }

    /// A class's own assertions, each put on the class's requests.
    pub fn own_sla(&mut self, ctx: &mut Ctx<'_>, on: &LabelRef, assertions: Vec<AssertionSpec>) {
        for mut a in assertions {
            match a.expr.value.clone().with_label(on.clone()) {
                Ok(e) => {
                    a.expr.value = e;
                    self.sla.push(a);
                }
                Err(why) => ctx.error(
                    a.expr.span,
                    why.to_string(),
                    format!("in {}'s sla", on.by),
                    None,
                ),
            }
        }
    }

    fn label(&mut self, ctx: &mut Ctx<'_>, node: &KdlNode, by: Grouping) -> Option<LabelSpec> {
        let mut r = NodeReader::new(ctx, node);
        let name = one_arg(ctx, &mut r, &format!("a {by} name")).and_then(|v| {
            let s = ctx.string(&v, by.as_str())?;
            if !valid_label(&s) {
                ctx.error(
                    v.span,
                    format!("invalid {by} name {:?}", crate::escape::terminal(&s)),
                    format!("1 to {MAX_LABEL_LEN} ASCII letters, digits and . _ - / :"),
                    Some(format!(
                        "a {by} name is read back in SLA selectors like `[{by}=NAME]`"
                    )),
                );
                return None;
            }
            Some(Spanned::new(s, v.span))
        });
        let weight = match r.prop(ctx, "weight") {
            Some(v) => ctx.uint(&v, "weight", 1, MAX_WEIGHT).unwrap_or(1) as u32,
            None => 1,
        };
        let mut label = LabelSpec {
            name: name?,
            weight,
            priority: None,
            dataset: None,
        };
        if by == Grouping::Class {
            self.class_parts(ctx, &mut r, &mut label);
        }
        r.finish(ctx);
        Some(label)
    }

    /// A class's `priority=` and own `dataset` (its `sla` blocks are the stage's to read).
    fn class_parts(&mut self, ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, label: &mut LabelSpec) {
        if let Some(v) = r.prop(ctx, "priority") {
            label.priority = ctx.int(&v, "priority", -MAX_PRIORITY, MAX_PRIORITY);
        }
        let shown = format!("class `{}`", label.name.value);
        let mut st = ClassRead {
            label,
            datasets: &mut self.datasets,
            shown,
        };
        for child in r.children() {
            match find(&[CLASS], child.name().value()) {
                Some(setting) => (setting.read)(ctx, child, &mut st),
                None => ctx.unknown_node(child, &st.shown, &names(&[CLASS])),
            }
        }
    }
}

/// A class's children.
const CLASS: &[Setting<ReadClass>] = &[
    // Its own data set; a second is reported here (after an invalid first, it is read).
    Setting::many("dataset", |ctx, child, st| {
        if st.label.dataset.is_some() {
            ctx.error(
                ctx.name_span(child),
                format!("duplicate `dataset` in {}", st.shown),
                "given again here",
                None,
            );
            return;
        }
        with_reader(ctx, child, |ctx, cr| {
            if let Some(v) = one_arg(ctx, cr, "a data set name")
                && let Some(s) = ctx.name_string(&v, "dataset")
            {
                let d = Spanned::new(s, v.span);
                st.datasets.push(d.clone());
                st.label.dataset = Some(d);
            }
        });
    }),
    // Its assertions: the stage reads them, on the class's label, once the class is valid.
    Setting::many("sla", |_, _, _| {}),
];
type ReadClass = fn(&mut Ctx<'_>, &KdlNode, &mut ClassRead<'_>);

/// A class as its children are read.
struct ClassRead<'s> {
    label: &'s mut LabelSpec,
    /// Every class's data set, for the reference check.
    datasets: &'s mut Vec<Spanned<String>>,
    /// How messages name the class.
    shown: String,
}

/// Every assertion that selects a label names one its stage (or, on every stage, some
/// stage) splits its requests into.
pub(crate) fn check_selectors(ctx: &mut Ctx<'_>, s: &super::model::Scenario) {
    for a in &s.sla {
        let Some(on) = &a.expr.value.label else {
            continue;
        };
        let stages: Vec<&super::model::StageSpec> = s
            .stages
            .iter()
            .filter(|st| a.stage.as_ref().is_none_or(|n| n.value == st.name.value))
            .collect();
        let found = stages.iter().any(|st| {
            st.groups
                .iter()
                .any(|g| g.by == on.by && g.labels.iter().any(|l| l.name.value == on.name))
        });
        if !found && !stages.is_empty() {
            let known: Vec<String> = stages
                .iter()
                .flat_map(|st| &st.groups)
                .filter(|g| g.by == on.by)
                .flat_map(|g| g.labels.iter().map(|l| format!("`{}`", l.name.value)))
                .collect();
            let help = if known.is_empty() {
                format!("add `{} \"{}\" weight=1` to the stage", on.by, on.name)
            } else {
                format!("{}s of the stage: {}", on.by, known.join(", "))
            };
            ctx.error(
                a.expr.span,
                format!("no stage here has the {} `{}`", on.by, on.name),
                "unknown label",
                Some(help),
            );
        }
    }
}

/// `priority-inversion "fail"|"report"`: whether an inversion fails the gate.
pub(crate) fn priority_gate(ctx: &mut Ctx<'_>, node: &KdlNode) -> bool {
    let mut r = NodeReader::new(ctx, node);
    let gate = one_arg(ctx, &mut r, "\"fail\" or \"report\"").and_then(|v| {
        let s = ctx.string(&v, "priority-inversion")?;
        match s.as_str() {
            "fail" => Some(true),
            "report" => Some(false),
            _ => {
                ctx.error(
                    v.span,
                    format!(
                        "unknown priority-inversion `{}`",
                        crate::escape::terminal(&s)
                    ),
                    "expected \"fail\" or \"report\"",
                    Some("\"fail\": an inversion fails the gate; \"report\": it is shown".into()),
                );
                None
            }
        }
    });
    r.finish(ctx);
    gate.unwrap_or(false)
}

/// A `priority-inversion` rule needs classes with at least two different priorities.
pub(crate) fn check_gate(ctx: &mut Ctx<'_>, node: &KdlNode, split: &Split) {
    let Some(child) = node.children().and_then(|c| {
        c.nodes()
            .iter()
            .find(|n| n.name().value() == "priority-inversion")
    }) else {
        return;
    };
    let mut priorities: Vec<i64> = split
        .groups
        .iter()
        .filter(|g| g.by == Grouping::Class)
        .flat_map(|g| g.labels.iter().filter_map(|l| l.priority))
        .collect();
    priorities.sort_unstable();
    priorities.dedup();
    if priorities.len() < 2 {
        ctx.error(
            ctx.name_span(child),
            "`priority-inversion` without classes of different priorities",
            "nothing to compare",
            Some("give at least two `class` nodes different `priority=` values".into()),
        );
    }
}
