//! Every import between the files of one crate of the workspace, read with syn rather than scanned as text (a
//! `use crate::{…}` that rustfmt wraps over lines, a path inside a macro, a name re-exported
//! by a folder's top file are all followed to the file that defines the item).
//!
//! The crate's modules are found from its root file (`lib.rs`, `main.rs`) by their `mod`
//! items; imports of another crate are Cargo's to check, not read here; test modules
//! (`#[cfg(test)]`, and anything else under a `cfg` that names `test`) are left out, with
//! every other item carrying that attribute. An import is a `use` leaf or a path in code that
//! starts with `crate`, `super`, `self`, a child module or a name imported by `use`; it points
//! at the file that defines what it names, through `pub use` re-exports and globs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};
use syn::{Attribute, ImplItem, Item, UseTree};

/// (importing file, imported file) → one path that makes the import, as written.
pub type Imports = BTreeMap<(String, String), String>;

/// A module path from the crate root (`["runner", "stage"]`).
type ModPath = Vec<String>;

/// What one module declares and brings into scope.
#[derive(Default)]
struct Module {
    /// The file its items are in, relative to `src/` (`runner/stage.rs`).
    file: String,
    children: BTreeSet<String>,
    /// Items defined here, other than modules.
    defs: BTreeSet<String>,
    /// Name → the path `use` gives it, as written (`["super", "Error"]`).
    uses: BTreeMap<String, Vec<String>>,
    /// `use path::*`, as written.
    globs: Vec<Vec<String>>,
}

/// The crate's module tree and the files behind it.
pub struct Crate {
    src: PathBuf,
    modules: BTreeMap<ModPath, Module>,
    /// Each module file's syntax, kept for the second pass.
    files: Vec<(ModPath, String, syn::File)>,
}

impl Crate {
    /// Parses the crate's root file (`lib.rs` or `main.rs`) and every module file it reaches.
    pub fn read(src: &Path, root: &str) -> Crate {
        let mut krate = Crate {
            src: src.to_path_buf(),
            modules: BTreeMap::new(),
            files: Vec::new(),
        };
        krate.load(Vec::new(), root.into(), src.to_path_buf());
        krate
    }

    /// Reads one module file and, through its `mod x;` items, the files below it. `dir` is
    /// where those child files live.
    fn load(&mut self, path: ModPath, file: String, dir: PathBuf) {
        let text = std::fs::read_to_string(self.src.join(&file))
            .unwrap_or_else(|e| panic!("reading src/{file}: {e}"));
        let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("parsing src/{file}: {e}"));
        let outlined = self.declare(&path, &file, &syntax.items);
        self.files.push((path.clone(), file, syntax));
        for (child, parent) in outlined {
            let flat = dir.join(format!("{}.rs", child.last().unwrap()));
            let nested = dir.join(child.last().unwrap()).join("mod.rs");
            let (found, below) = if flat.exists() {
                (flat, dir.join(child.last().unwrap()))
            } else if nested.exists() {
                let below = nested.parent().unwrap().to_path_buf();
                (nested, below)
            } else {
                panic!(
                    "module {} (declared in {parent}) has no file",
                    child.join("::")
                );
            };
            let rel = found.strip_prefix(&self.src).unwrap();
            self.load(child, rel.to_string_lossy().into_owned(), below);
        }
    }

    /// Records what `items` (of module `path`, in `file`) declare; returns the child modules
    /// whose bodies are in files of their own.
    fn declare(&mut self, path: &ModPath, file: &str, items: &[Item]) -> Vec<(ModPath, String)> {
        self.modules.entry(path.clone()).or_default().file = file.to_string();
        let mut outlined = Vec::new();
        for item in items {
            if is_test(item_attrs(item)) {
                continue;
            }
            let module = self.modules.get_mut(path).unwrap();
            match item {
                Item::Mod(m) => {
                    let name = m.ident.to_string();
                    module.children.insert(name.clone());
                    let mut child = path.clone();
                    child.push(name);
                    match &m.content {
                        Some((_, inner)) => outlined.extend(self.declare(&child, file, inner)),
                        None => outlined.push((child, file.to_string())),
                    }
                }
                Item::Use(u) => collect_use(&u.tree, &mut Vec::new(), module),
                other => {
                    if let Some(name) = item_name(other) {
                        module.defs.insert(name);
                    }
                }
            }
        }
        outlined
    }

    /// Every import, as (importing file, imported file), both relative to the crate's `src/`,
    /// with one path that makes it (as written).
    pub fn imports(&self) -> Imports {
        let mut out = Imports::new();
        for (path, file, syntax) in &self.files {
            let mut v = Visitor::new(self, path.clone(), file);
            v.visit_file(syntax);
            out.append(&mut v.found);
        }
        out
    }

    /// Makes `segs`, written in module `at`, a path from the crate root; `None` when it names
    /// another crate or a local. A `use` path may not start with another import's name.
    fn absolute(&self, at: &ModPath, segs: &[String], in_use: bool) -> Option<Vec<String>> {
        let first = segs.first()?;
        let module = self.modules.get(at)?;
        let (mut base, rest) = match first.as_str() {
            "crate" => (Vec::new(), &segs[1..]),
            "self" => (at.clone(), &segs[1..]),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let base = at[..at.len().checked_sub(ups)?].to_vec();
                (base, &segs[ups..])
            }
            name if module.children.contains(name) || module.defs.contains(name) => {
                (at.clone(), segs)
            }
            name if !in_use && module.uses.contains_key(name) => {
                let mut target = self.absolute(at, &module.uses[name], true)?;
                target.extend_from_slice(&segs[1..]);
                return Some(target);
            }
            _ => return None,
        };
        base.extend_from_slice(rest);
        Some(base)
    }

    /// The file that defines what the crate-root path `abs` names (for a module, its file).
    fn resolve(&self, abs: &[String], depth: usize) -> Option<String> {
        if depth > 16 {
            return None;
        }
        let mut cur: ModPath = Vec::new();
        for (i, seg) in abs.iter().enumerate() {
            let module = self.modules.get(&cur)?;
            if module.children.contains(seg) {
                cur.push(seg.clone());
                continue;
            }
            if module.defs.contains(seg) {
                return Some(module.file.clone());
            }
            if let Some(written) = module.uses.get(seg) {
                let mut target = self.absolute(&cur, written, true)?;
                target.extend_from_slice(&abs[i + 1..]);
                return self.follow(&cur, &target, depth);
            }
            return module.globs.iter().find_map(|glob| {
                let mut target = self.absolute(&cur, glob, true)?;
                target.extend_from_slice(&abs[i..]);
                self.follow(&cur, &target, depth)
            });
        }
        self.modules.get(&cur).map(|m| m.file.clone())
    }

    /// Where a name that module `at` imports leads: to the file that defines it when `at` is
    /// the crate root or the name comes from `at`'s own folder; when it comes from another
    /// folder, `at`'s file is what the path names (so `crate::app::Draft`, which `app`
    /// re-exports from `scaffold`, is an import of `app`, as written).
    fn follow(&self, at: &ModPath, target: &[String], depth: usize) -> Option<String> {
        let file = self.resolve(target, depth + 1)?;
        match at.first() {
            Some(folder) if target.first() != Some(folder) => {
                self.modules.get(at).map(|m| m.file.clone())
            }
            _ => Some(file),
        }
    }
}

/// Walks one file's code, module by module, collecting the files its paths name.
struct Visitor<'a> {
    krate: &'a Crate,
    module: ModPath,
    file: &'a str,
    found: Imports,
}

impl<'a> Visitor<'a> {
    fn new(krate: &'a Crate, module: ModPath, file: &'a str) -> Self {
        Visitor {
            krate,
            module,
            file,
            found: Imports::new(),
        }
    }

    /// Records the import `segs` (as written here) names, if it is one of the crate's.
    fn import(&mut self, segs: &[String], in_use: bool) {
        let abs = self.krate.absolute(&self.module, segs, in_use);
        if let Some(target) = abs.and_then(|abs| self.krate.resolve(&abs, 0))
            && target != self.file
        {
            let key = (self.file.to_string(), target);
            self.found.entry(key).or_insert_with(|| segs.join("::"));
        }
    }

    fn use_tree(&mut self, tree: &UseTree, prefix: &mut Vec<String>) {
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(&p.tree, prefix);
                prefix.pop();
            }
            UseTree::Name(n) => self.use_leaf(prefix, Some(n.ident.to_string())),
            UseTree::Rename(r) => self.use_leaf(prefix, Some(r.ident.to_string())),
            UseTree::Glob(_) => self.use_leaf(prefix, None),
            UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(t, prefix)),
        }
    }

    fn use_leaf(&mut self, prefix: &[String], name: Option<String>) {
        let mut segs = prefix.to_vec();
        // `use a::{self, B}`: the `self` leaf is `a` itself.
        segs.extend(name.filter(|n| n != "self"));
        self.import(&segs, true);
    }

    /// `crate::a::b` and the like inside a macro's tokens (`format!`, `matches!`, …).
    fn macro_paths(&mut self, tokens: TokenStream) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tts.len() {
            let first = match &tts[i] {
                TokenTree::Group(g) => {
                    self.macro_paths(g.stream());
                    i += 1;
                    continue;
                }
                TokenTree::Ident(id) => id.to_string(),
                _ => {
                    i += 1;
                    continue;
                }
            };
            let mut segs = vec![first];
            i += 1;
            while let (
                Some(TokenTree::Punct(a)),
                Some(TokenTree::Punct(b)),
                Some(TokenTree::Ident(id)),
            ) = (tts.get(i), tts.get(i + 1), tts.get(i + 2))
            {
                if a.as_char() != ':' || b.as_char() != ':' {
                    break;
                }
                segs.push(id.to_string());
                i += 3;
            }
            if segs.len() > 1 {
                self.import(&segs, false);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Visitor<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        if is_test(item_attrs(item)) {
            return;
        }
        match item {
            Item::Mod(m) => {
                self.module.push(m.ident.to_string());
                visit::visit_item_mod(self, m);
                self.module.pop();
            }
            Item::Use(u) => self.use_tree(&u.tree, &mut Vec::new()),
            other => visit::visit_item(self, other),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast ImplItem) {
        let attrs = match item {
            ImplItem::Const(c) => &c.attrs,
            ImplItem::Fn(f) => &f.attrs,
            ImplItem::Type(t) => &t.attrs,
            ImplItem::Macro(m) => &m.attrs,
            _ => return visit::visit_impl_item(self, item),
        };
        if !is_test(attrs) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        // A lone name is a local, or one a `use` (counted there) or this file defines.
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.import(&segs, false);
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.macro_paths(mac.tokens.clone());
        visit::visit_macro(self, mac);
    }
}

/// Records one `use` tree's names in `module`.
fn collect_use(tree: &UseTree, prefix: &mut Vec<String>, module: &mut Module) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            collect_use(&p.tree, prefix, module);
            prefix.pop();
        }
        UseTree::Name(n) if n.ident == "self" => {
            let name = prefix.last().cloned().unwrap_or_default();
            module.uses.insert(name, prefix.clone());
        }
        UseTree::Name(n) => {
            let mut full = prefix.clone();
            full.push(n.ident.to_string());
            module.uses.insert(n.ident.to_string(), full);
        }
        UseTree::Rename(r) => {
            let mut full = prefix.clone();
            full.push(r.ident.to_string());
            module.uses.insert(r.rename.to_string(), full);
        }
        UseTree::Glob(_) => module.globs.push(prefix.clone()),
        UseTree::Group(g) => g.items.iter().for_each(|t| collect_use(t, prefix, module)),
    }
}

/// The name an item defines in its module, for those that define one.
fn item_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Fn(i) => &i.sig.ident,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::TraitAlias(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        Item::Macro(i) => i.ident.as_ref()?,
        _ => return None,
    };
    Some(ident.to_string())
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// `#[cfg(test)]`, `#[cfg(all(test, …))]`: code only tests build.
fn is_test(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|l| {
                let text = l.tokens.to_string();
                text.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|w| w == "test")
                    && !text.contains("not")
            })
    })
}
