//! A node's settings, each written once: a table of names, each with what reading it does,
//! from which come both the decoding (which setting a child, property or kind is) and the
//! diagnostics (the names an unknown one is compared with, in the table's order). Why a table
//! and not derived decoding: docs/architecture.md, "Reading a KDL node".

use kdl::KdlNode;

use super::ctx::{Ctx, NodeReader, Once};

/// One name a node accepts (a child node, a property, a kind given as an argument) and how it
/// is read: `read` is a function whose shape the table chooses.
pub(super) struct Setting<F> {
    pub name: &'static str,
    /// Whether it may be written more than once in its block; a second one of a setting that
    /// may not is reported (by [`Once`]) and not read.
    pub many: bool,
    pub read: F,
}

impl<F> Setting<F> {
    /// A setting given at most once in its block.
    pub const fn once(name: &'static str, read: F) -> Self {
        Setting {
            name,
            many: false,
            read,
        }
    }

    /// A setting that may be repeated (or whose repetition its reader judges itself).
    pub const fn many(name: &'static str, read: F) -> Self {
        Setting {
            name,
            many: true,
            read,
        }
    }
}

/// The common shape: a child node read through the [`NodeReader`] opened (and finished)
/// around it, into its parent's state `T`.
pub(super) type Entries<T> = fn(&mut Ctx<'_>, &mut NodeReader<'_>, &mut T);

/// A child read from the node itself: a block whose own parser opens its reader, or one that
/// another part reads.
pub(super) type Block<T> = fn(&mut Ctx<'_>, &KdlNode, &mut T);

/// The names of `tables`, in order: what an unknown name is compared with.
pub(super) fn names<F>(tables: &[&[Setting<F>]]) -> Vec<&'static str> {
    tables
        .iter()
        .flat_map(|t| t.iter().map(|s| s.name))
        .collect()
}

/// The setting called `name` in `tables`.
pub(super) fn find<'t, F>(tables: &[&'t [Setting<F>]], name: &str) -> Option<&'t Setting<F>> {
    tables
        .iter()
        .flat_map(|t| t.iter())
        .find(|s| s.name == name)
}

/// Reads each of `children` through its setting in `tables`: an unknown name is reported
/// against every name of the tables (in `parent`), and so is a second one of a setting given
/// once. Whether every child was known.
pub(super) fn read_children<T, F: ReadChild<T>>(
    ctx: &mut Ctx<'_>,
    children: &[KdlNode],
    parent: &str,
    tables: &[&[Setting<F>]],
    state: &mut T,
) -> bool {
    let mut once = Once::default();
    let mut known = true;
    for child in children {
        let Some(setting) = find(tables, child.name().value()) else {
            ctx.unknown_node(child, parent, &names(tables));
            known = false;
            continue;
        };
        if setting.many || once.first(ctx, child, parent) {
            setting.read.read_child(ctx, child, state);
        }
    }
    known
}

/// How a table's setting reads its child node.
pub(super) trait ReadChild<T> {
    fn read_child(&self, ctx: &mut Ctx<'_>, node: &KdlNode, state: &mut T);
}

impl<T> ReadChild<T> for Entries<T> {
    fn read_child(&self, ctx: &mut Ctx<'_>, node: &KdlNode, state: &mut T) {
        with_reader(ctx, node, |ctx, r| self(ctx, r, state));
    }
}

impl<T> ReadChild<T> for Block<T> {
    fn read_child(&self, ctx: &mut Ctx<'_>, node: &KdlNode, state: &mut T) {
        self(ctx, node, state);
    }
}

/// `read` on a [`NodeReader`] of `node`, which then reports what `read` did not ask for.
pub(super) fn with_reader<R>(
    ctx: &mut Ctx<'_>,
    node: &KdlNode,
    read: impl FnOnce(&mut Ctx<'_>, &mut NodeReader<'_>) -> R,
) -> R {
    let mut r = NodeReader::new(ctx, node);
    let out = read(ctx, &mut r);
    r.finish(ctx);
    out
}
