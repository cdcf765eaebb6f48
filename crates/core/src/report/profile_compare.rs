//! `compare --plot`: a baseline and a current run drawn together — one latency profile per
//! profile group (sweep or search) the two runs share, then one latency distribution per
//! stage they share (baseline dashed with hollow markers, current solid).

use std::path::{Path, PathBuf};

use super::plots::stage_verdicts;
use super::{ReportError, distribution_svg, profile_svg, profiles, stage_slug};
use crate::results::Results;

/// Every comparison plot, as (name, SVG): the shared profiles (named by group), then each
/// shared stage's distributions (named `stage-<name>-latency`).
pub fn compare_svgs(
    baseline: &Results,
    current: &Results,
) -> Result<Vec<(String, String)>, ReportError> {
    let mut out = compare_profile_svgs(baseline, current)?;
    for s in &current.stages {
        let Some(b) = baseline.stages.iter().find(|b| b.name == s.name) else {
            continue;
        };
        let title = format!("{}: latency distribution, baseline and current", s.name);
        let verdicts = stage_verdicts(current, &s.name);
        if let Some(svg) = distribution_svg(&title, &[("baseline", b), ("current", s)], &verdicts)?
        {
            out.push((format!("stage-{}-latency", s.name), svg));
        }
    }
    Ok(out)
}

/// One SVG per profile group present in both runs, baseline first (so its knee and SLA
/// maximum are marked), in the baseline's order. Empty when the runs share no group.
pub fn compare_profile_svgs(
    baseline: &Results,
    current: &Results,
) -> Result<Vec<(String, String)>, ReportError> {
    let cur = profiles(current);
    let mut out = Vec::new();
    for b in profiles(baseline) {
        let Some(c) = cur.iter().find(|c| c.group == b.group && c.axis == b.axis) else {
            continue;
        };
        let svg = profile_svg(&[("baseline", &b), ("current", c)])?;
        out.push((b.group.clone(), svg));
    }
    Ok(out)
}

/// Where group number `i` of a `compare --plot FILE` goes: `FILE` for the first, then
/// `FILE-stem-<group>.svg` beside it.
pub fn compare_plot_path(file: &Path, i: usize, group: &str) -> PathBuf {
    if i == 0 {
        return file.to_path_buf();
    }
    let stem = file
        .file_stem()
        .map_or_else(|| "profile".into(), |s| s.to_string_lossy().into_owned());
    file.with_file_name(format!("{stem}-{}.svg", stage_slug(group)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_groups_get_their_own_file_beside_the_first() {
        let f = Path::new("/tmp/out/profile.svg");
        assert_eq!(
            compare_plot_path(f, 0, "a"),
            PathBuf::from("/tmp/out/profile.svg")
        );
        assert_eq!(
            compare_plot_path(f, 1, "clients"),
            PathBuf::from("/tmp/out/profile-clients.svg")
        );
    }
}
