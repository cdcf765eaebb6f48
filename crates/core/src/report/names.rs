//! The names of a run's plot files (each stage's, profile group's and server timeline's, from
//! a bounded, one-to-one slug of its name), and a plot as a report links it ([`Plot`]).

use serde::Serialize;
use sha2::{Digest, Sha256};

/// The longest slug kept whole; longer or lossy ones are cut to [`SLUG_PREFIX`] characters and
/// given a hash.
const SLUG_MAX: usize = 64;
const SLUG_PREFIX: usize = 48;

/// A name made safe for a file name and a Markdown link, bounded and one-to-one: a name that is
/// already a slug (`a`–`z`, `0`–`9`, `-`, `_`, at most 64 characters) is kept as it is; any
/// other gets its first 48 characters lower-cased, other characters replaced by `-`, and the
/// first 8 hex digits of its sha256 (`Load A` → `load-a-5e1c0b1d`), so `Load A` and `load-a`
/// get different files and a 300-character name a file name any file system takes. A secret in
/// the name is masked first.
pub fn stage_slug(name: &str) -> String {
    // A file name is written wherever the reports go: never with a secret in it (a stage
    // named after a key is slugged, and hashed, as its masked form).
    let masked = crate::redact::secrets(name);
    let name = masked.as_ref();
    let clean = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
    if !name.is_empty() && name.len() <= SLUG_MAX && name.chars().all(clean) {
        return name.to_string();
    }
    let mut slug: String = name
        .chars()
        .take(SLUG_PREFIX)
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if clean(c) { c } else { '-' }
        })
        .collect();
    if slug.is_empty() {
        slug.push_str("stage");
    }
    let digest = Sha256::digest(name.as_bytes());
    for b in &digest[..4] {
        slug.push_str(&format!("{b:02x}"));
    }
    // The hash after a `-`, unless the cut name already ends with one.
    if !slug[..slug.len() - 8].ends_with('-') {
        slug.insert(slug.len() - 8, '-');
    }
    slug
}

pub fn cdf_file_name(stage: &str) -> String {
    format!("stage-{}-latency-cdf.svg", stage_slug(stage))
}

pub fn timeline_file_name(stage: &str) -> String {
    format!("stage-{}-timeline.svg", stage_slug(stage))
}

/// File name of a stage's server timeline (telemetry).
pub fn server_timeline_file_name(stage: &str) -> String {
    format!("stage-{}-server.svg", stage_slug(stage))
}

/// File name of a group's profile plot.
pub fn profile_file_name(group: &str) -> String {
    format!("profile-{}.svg", stage_slug(group))
}

/// A plot a report shows: its file (relative to the report) and its alt text.
#[derive(Debug, Serialize)]
pub struct Plot {
    pub alt: String,
    pub file: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_in_a_stage_name_never_reaches_a_file_name() {
        let key = "sk-proj-Zq8f3kLm2Nn4Pp6Rr8Tt0Vv2Xx4Zz6Bb8Dd";
        for file in [
            timeline_file_name(&format!("closed {key}")),
            cdf_file_name(key),
        ] {
            assert!(!file.contains("zq8f3klm2nn4"), "{file}");
            assert!(
                !file.to_lowercase().contains(&key[8..20].to_lowercase()),
                "{file}"
            );
        }
        // Names without secrets keep their slugs.
        assert_eq!(stage_slug("steady"), "steady");
    }
}
