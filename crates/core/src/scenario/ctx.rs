//! The decoding context shared by every part of the parser: the problems found so far, the
//! effective params, and [`NodeReader`], which reads a node's arguments and properties (with
//! `(param)` substitution) and reports whatever it was not asked for.

use std::collections::{BTreeMap, HashMap};

use kdl::{KdlNode, KdlValue};
use miette::{NamedSource, SourceSpan};

use super::error::{Problem, Snippets, bounded, bounded_span, did_you_mean, suggest};
use super::written::ParamValue;

/// A declared param: its effective value and where it was declared.
#[derive(Debug, Clone)]
pub(crate) struct ParamDecl {
    pub value: ParamValue,
    pub span: SourceSpan,
}

pub(crate) struct Ctx<'t> {
    pub text: &'t str,
    pub src: NamedSource<Snippets>,
    pub params: BTreeMap<String, ParamDecl>,
    pub problems: Vec<Problem>,
    /// The directory the scenario's relative paths resolve against, when it is read from a
    /// file: the paths it names are checked to be regular files (`named_files.rs`).
    pub base_dir: Option<std::path::PathBuf>,
    /// The file's top-level nodes: one of them met inside a block is told where it belongs.
    pub top_level: Vec<&'static str>,
}

/// A value read from the file, after `(param)` substitution.
#[derive(Debug, Clone)]
pub(crate) struct Val {
    pub value: KdlValue,
    /// The whole entry (`rate=20` or `"60s"`), trimmed of surrounding space.
    pub span: SourceSpan,
    /// The param this value came from, for messages.
    pub param: Option<String>,
}

impl Val {
    /// The value as the user would write it, for "got …" messages.
    pub fn shown(&self) -> String {
        let v = show(&self.value);
        match &self.param {
            Some(p) => format!("{v} (from param `{p}`)"),
            None => v,
        }
    }
}

pub(crate) fn show(v: &KdlValue) -> String {
    match v {
        KdlValue::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

impl<'t> Ctx<'t> {
    pub fn new(text: &'t str, src: NamedSource<Snippets>) -> Self {
        Ctx {
            text,
            src,
            params: BTreeMap::new(),
            problems: Vec::new(),
            base_dir: None,
            top_level: Vec::new(),
        }
    }

    pub fn error(
        &mut self,
        span: impl Into<Option<SourceSpan>>,
        message: impl Into<String>,
        label: impl Into<String>,
        help: Option<String>,
    ) {
        // Bounded: a problem may quote the user's text (a node name, a value), which may be
        // a megabyte of garbage.
        self.problems.push(Problem {
            message: bounded(message.into()),
            src: self.src.clone(),
            span: span.into().map(|s| bounded_span(self.text, s)),
            label: bounded(label.into()),
            help: help.map(bounded),
        });
    }

    /// `span` without the spaces, newlines and terminators kdl counts as part of a node or entry.
    pub fn trim(&self, span: SourceSpan) -> SourceSpan {
        let (start, end) = (span.offset(), span.offset() + span.len());
        let Some(s) = self.text.get(start..end.min(self.text.len())) else {
            return span;
        };
        let lead = s.len() - s.trim_start().len();
        let t = s
            .trim_start()
            .trim_end_matches(|c: char| c.is_whitespace() || c == ';');
        SourceSpan::new((start + lead).into(), t.len())
    }

    /// Where a node's name is written: what most node-level problems point at.
    pub fn name_span(&self, node: &KdlNode) -> SourceSpan {
        let s = self.trim(node.name().span());
        if s.is_empty() {
            self.trim(node.span())
        } else {
            s
        }
    }

    /// The first line of a node (name and entries, not its children block).
    pub fn line_span(&self, node: &KdlNode) -> SourceSpan {
        let span = self.trim(node.span());
        let s = self
            .text
            .get(span.offset()..span.offset() + span.len())
            .unwrap_or("");
        let line = s.split(['\n', '{']).next().unwrap_or(s).trim_end();
        SourceSpan::new(span.offset().into(), line.len())
    }

    pub fn unknown_node(&mut self, node: &KdlNode, parent: &str, known: &[&str]) {
        let name = node.name().value();
        let help = self.unknown_help(name, parent, known, "node");
        self.error(
            self.name_span(node),
            format!("unknown node `{name}` in {parent}"),
            "not a known node here",
            Some(help),
        );
    }

    /// The hint for `name`, unknown in `parent`: where it belongs when it is a top-level node
    /// (`tokenizer` inside `target { }` is the usual slip), else the nearest known `what`.
    pub fn unknown_help(&self, name: &str, parent: &str, known: &[&str], what: &str) -> String {
        if !known.contains(&name) && self.top_level.contains(&name) {
            format!("`{name}` is a top-level node: move it out of {parent} to the file's top level")
        } else {
            suggest(name, known, what)
        }
    }

    /// Resolves `(param)"name"`; any other annotation is an error.
    fn resolve(&mut self, entry: &kdl::KdlEntry) -> Option<Val> {
        let span = self.trim(entry.span());
        let Some(ty) = entry.ty() else {
            return Some(Val {
                value: entry.value().clone(),
                span,
                param: None,
            });
        };
        if ty.value() != "param" {
            self.error(
                span,
                format!("unknown type annotation `({})`", ty.value()),
                "unknown annotation",
                Some("the only value annotation is (param), as in rate=(param)\"rate\"".into()),
            );
            return None;
        }
        let Some(name) = entry.value().as_string() else {
            self.error(
                span,
                "a (param) reference needs the param name as a string",
                format!("expected a param name, got {}", show(entry.value())),
                Some("write e.g. rate=(param)\"rate\"".into()),
            );
            return None;
        };
        match self.params.get(name) {
            Some(decl) => Some(Val {
                value: param_to_kdl(&decl.value),
                span,
                param: Some(name.to_string()),
            }),
            None => {
                let help = match did_you_mean(name, self.params.keys().map(String::as_str)) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("declare it at the top level: param \"{name}\" <default>"),
                };
                self.error(
                    span,
                    format!("undefined param `{name}`"),
                    "no param with this name is declared",
                    Some(help),
                );
                None
            }
        }
    }
}

pub(crate) fn param_to_kdl(v: &ParamValue) -> KdlValue {
    match v {
        ParamValue::Int(i) => KdlValue::Integer(*i as i128),
        ParamValue::Float(f) => KdlValue::Float(*f),
        ParamValue::String(s) => KdlValue::String(s.clone()),
        ParamValue::Bool(b) => KdlValue::Bool(*b),
    }
}

/// Reads one node's entries, remembering which were consumed so that [`NodeReader::finish`]
/// can report the rest (unknown properties with a did-you-mean, extra arguments).
pub(crate) struct NodeReader<'n> {
    pub node: &'n KdlNode,
    used: Vec<bool>,
    asked: Vec<&'static str>,
    children_used: bool,
}

impl<'n> NodeReader<'n> {
    pub fn new(ctx: &mut Ctx<'_>, node: &'n KdlNode) -> Self {
        if let Some(ty) = node.ty() {
            ctx.error(
                ctx.name_span(node),
                format!("type annotation `({})` on a node", ty.value()),
                "nodes take no annotation",
                Some("only values can be annotated, with (param)".into()),
            );
        }
        NodeReader {
            node,
            used: vec![false; node.entries().len()],
            asked: Vec::new(),
            children_used: false,
        }
    }

    pub fn name(&self) -> &'n str {
        self.node.name().value()
    }

    /// The `i`-th positional argument.
    pub fn arg(&mut self, ctx: &mut Ctx<'_>, i: usize) -> Option<Val> {
        let (idx, entry) = self
            .node
            .entries()
            .iter()
            .enumerate()
            .filter(|(_, e)| e.name().is_none())
            .nth(i)?;
        self.used[idx] = true;
        ctx.resolve(entry)
    }

    /// Marks the first `n` positional arguments as read without resolving them.
    pub fn skip_args(&mut self, n: usize) {
        let entries = self.node.entries().iter().enumerate();
        for (idx, _) in entries.filter(|(_, e)| e.name().is_none()).take(n) {
            self.used[idx] = true;
        }
    }

    /// Marks every entry as read: after an error that makes the rest meaningless.
    pub fn skip_all(&mut self) {
        self.used.iter_mut().for_each(|u| *u = true);
    }

    /// Number of positional arguments.
    pub fn arg_count(&self) -> usize {
        self.node
            .entries()
            .iter()
            .filter(|e| e.name().is_none())
            .count()
    }

    /// Every positional argument from the `from`-th on (unresolvable ones are dropped, having
    /// been reported).
    pub fn args_from(&mut self, ctx: &mut Ctx<'_>, from: usize) -> Vec<Val> {
        (from..self.arg_count())
            .filter_map(|i| self.arg(ctx, i))
            .collect()
    }

    /// Property `name=…`; when given twice, the second is reported and the last one wins (as in
    /// KDL).
    pub fn prop(&mut self, ctx: &mut Ctx<'_>, name: &'static str) -> Option<Val> {
        self.asked.push(name);
        let mut found = None;
        for (idx, e) in self.node.entries().iter().enumerate() {
            if e.name().map(|n| n.value()) == Some(name) {
                if found.is_some() {
                    ctx.error(
                        ctx.trim(e.span()),
                        format!("property `{name}` given twice"),
                        "repeated here",
                        Some("give each property once".into()),
                    );
                }
                self.used[idx] = true;
                found = Some(e);
            }
        }
        found.and_then(|e| ctx.resolve(e))
    }

    /// The child nodes (none when there is no `{ … }` block).
    pub fn children(&mut self) -> &'n [KdlNode] {
        self.children_used = true;
        self.node.children().map(|d| d.nodes()).unwrap_or(&[])
    }

    /// Reports every entry nobody asked for, and a children block on a node that takes none.
    pub fn finish(self, ctx: &mut Ctx<'_>) {
        let name = self.name();
        for (e, used) in self.node.entries().iter().zip(&self.used) {
            if *used {
                continue;
            }
            let span = ctx.trim(e.span());
            match e.name() {
                Some(key) => {
                    let key = key.value();
                    ctx.error(
                        span,
                        format!("unknown property `{key}` on `{name}`"),
                        "unknown property",
                        Some(suggest(key, &self.asked, "property")),
                    );
                }
                None => ctx.error(
                    span,
                    format!("unexpected argument to `{name}`"),
                    "not expected here",
                    Some(format!(
                        "remove it; see docs/scenario.md for the form of `{name}`"
                    )),
                ),
            }
        }
        if !self.children_used
            && let Some(children) = self.node.children()
        {
            ctx.error(
                ctx.trim(children.span()),
                format!("`{name}` takes no children block"),
                "unexpected block",
                Some("remove the { … } block".into()),
            );
        }
    }
}

/// Tracks nodes that may appear only once in a block.
#[derive(Default)]
pub(crate) struct Once(HashMap<String, SourceSpan>);

impl Once {
    /// True for the first occurrence; reports the later ones.
    pub fn first(&mut self, ctx: &mut Ctx<'_>, node: &KdlNode, parent: &str) -> bool {
        let name = node.name().value();
        let span = ctx.name_span(node);
        if self.0.contains_key(name) {
            ctx.error(
                span,
                format!("duplicate `{name}` in {parent}"),
                "given again here",
                Some(format!("only one `{name}` is allowed here; remove one")),
            );
            return false;
        }
        self.0.insert(name.to_string(), span);
        true
    }
}

/// Reads the single argument of a `name VALUE` node, reporting it when missing.
pub(crate) fn one_arg(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, expected: &str) -> Option<Val> {
    if r.arg_count() == 0 {
        ctx.error(
            ctx.name_span(r.node),
            format!("`{}` needs a value", r.name()),
            format!("expected {expected}"),
            None,
        );
        return None;
    }
    r.arg(ctx, 0)
}
