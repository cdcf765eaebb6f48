//! Records the git commit infermeter is built from as `INFERMETER_COMMIT` (for the
//! provenance of every result), `unknown` when there is no git checkout or no git. Asks git
//! itself rather than pulling in a crate (vergen, built) for one string.
//!
//! It belongs to the command-line crate, the smallest: a new commit reruns it and rebuilds
//! only `src/main.rs` and `src/cli/`, never the library (which is handed the commit at start,
//! `app::set_build_commit`).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=INFERMETER_COMMIT");
    let commit = std::env::var("INFERMETER_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    // Rebuilt when HEAD moves: the HEAD file (a branch switch) and the ref it points to (a
    // commit), wherever this checkout or worktree keeps them.
    for path in ["HEAD", "packed-refs"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(p) = git(&["rev-parse", "--git-path", &r])
    {
        println!("cargo:rerun-if-changed={p}");
    }
    println!("cargo:rustc-env=INFERMETER_COMMIT={commit}");
}
