//! A stage's `model` and `class` splits in the plan: each label with its weight, priority and
//! data set index, checked against what the stage can carry (a class's own data set is a
//! prompt source of its own, which a session or a trace replay, whose requests come from the
//! stage's data set, cannot take).

use super::{DatasetPlan, PlanError};
use crate::dataset::DatasetSource;
use crate::protocol::{Group, Label};
use crate::scenario::StageSpec;

pub(super) fn stage_groups(
    spec: &StageSpec,
    datasets: &[DatasetPlan],
    stage_dataset: usize,
    trace: bool,
) -> Result<Vec<Group>, PlanError> {
    let who = || format!("stage `{}`", spec.name.value);
    let mut out = Vec::with_capacity(spec.groups.len());
    for g in &spec.groups {
        let mut labels = Vec::with_capacity(g.labels.len());
        for l in &g.labels {
            let dataset = match &l.dataset {
                None => None,
                Some(d) => {
                    let i = datasets
                        .iter()
                        .position(|p| p.name == d.value)
                        .ok_or_else(|| PlanError::UnknownDataset {
                            stage: who(),
                            dataset: d.value.clone(),
                            declared: datasets
                                .iter()
                                .map(|p| format!("`{}`", p.name))
                                .collect::<Vec<_>>()
                                .join(", "),
                        })?;
                    let own_source = |i: usize| datasets.get(i).map(|d| &d.source);
                    if trace || matches!(own_source(i), Some(DatasetSource::Trace { .. })) {
                        return Err(bad(&who(), "a class's own data set cannot be a trace"));
                    }
                    if datasets.get(i).is_some_and(|d| d.hooks.is_some()) {
                        return Err(bad(
                            &who(),
                            "a class's own data set cannot have hooks (the stage's data set's \
                             hooks run on every request)",
                        ));
                    }
                    let sessions = |i: usize| datasets.get(i).is_some_and(|d| d.session.is_some());
                    if sessions(i) || sessions(stage_dataset) {
                        return Err(bad(
                            &who(),
                            "a class's own data set cannot take part in multi-turn sessions",
                        ));
                    }
                    Some(i)
                }
            };
            labels.push(Label {
                name: l.name.value.clone(),
                weight: l.weight,
                priority: l.priority,
                dataset,
            });
        }
        out.push(Group { by: g.by, labels });
    }
    Ok(out)
}

fn bad(who: &str, reason: &str) -> PlanError {
    PlanError::BadStage {
        stage: who.to_string(),
        reason: reason.to_string(),
    }
}
