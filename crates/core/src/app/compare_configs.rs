//! `compare RUN.json --configs A B`: two configurations of one run compared as two runs. Each
//! side is the run's stages on one configuration with the configuration's suffix taken off
//! their names (`chat@A` → `chat`), so `compare` pairs `chat@A` with `chat@B` as it pairs a
//! stage of two runs; the verdicts and searches follow their stages.

use crate::error::Error;
use crate::results::Results;

/// The run `r` as configuration `a`'s run and configuration `b`'s.
pub(super) fn split(r: &Results, a: &str, b: &str) -> Result<(Results, Results), Error> {
    Ok((on(r, a)?, on(r, b)?))
}

/// The run's stages, verdicts and searches on `config`, its suffix taken off their names.
fn on(r: &Results, config: &str) -> Result<Results, Error> {
    let suffix = format!("@{config}");
    let strip = |name: &str| name.strip_suffix(&suffix).map(str::to_string);
    let mut out = r.clone();
    out.configs = None;
    out.stages = r
        .stages
        .iter()
        .filter_map(|s| {
            let mut s = s.clone();
            s.name = strip(&s.name)?;
            if let Some(p) = &mut s.profile {
                p.point.group = strip(&p.point.group).unwrap_or_else(|| p.point.group.clone());
            }
            Some(s)
        })
        .collect();
    if out.stages.is_empty() {
        let known = crate::sla::config_names(&r.stages);
        return Err(Error::usage(
            format!("the run has no stage on configuration `{config}`"),
            if known.is_empty() {
                "the run has no server configurations (`config` lines)".to_string()
            } else {
                format!("its configurations: {}", known.join(", "))
            },
        ));
    }
    out.sla = r
        .sla
        .iter()
        .filter_map(|v| {
            let mut v = v.clone();
            v.stage = Some(strip(v.stage.as_deref()?)?);
            Some(v)
        })
        .collect();
    out.searches = r
        .searches
        .iter()
        .filter_map(|s| {
            let mut s = s.clone();
            s.group = strip(&s.group)?;
            for p in &mut s.probes {
                p.stage = strip(&p.stage).unwrap_or_else(|| p.stage.clone());
            }
            Some(s)
        })
        .collect();
    Ok(out)
}
