//! The request bodies of a stage split by `model` and `class`: one body template per pair of
//! labels, made when the stage opens, so a request picks its template by its labels' indices
//! and nothing is allocated per request. A model label names the model (or adapter) sent; a
//! class with a priority adds vLLM's `priority` body field, or (`priority-as "header"`) the
//! client sends it in the target's priority header, or both.

use std::sync::Arc;

use crate::client::BodyTemplate;
use crate::protocol::{Group, Grouping, Labels};

/// A stage's body templates, one per (model, class) pair; empty when the stage has no split.
pub(super) struct Variants {
    templates: Vec<Arc<BodyTemplate>>,
    /// Labels of each grouping (1 where the stage has none), models major.
    models: usize,
    classes: usize,
    /// Each class's priority, for the priority header; empty when none is sent.
    priorities: Vec<Option<i64>>,
}

impl Variants {
    /// `body`: a class's priority goes in the body; `header`: in the priority header.
    pub(super) fn new(
        base: &Arc<BodyTemplate>,
        groups: &[Group],
        (body, header): (bool, bool),
    ) -> Variants {
        let of = |by: Grouping| groups.iter().find(|g| g.by == by);
        let (models, classes) = (of(Grouping::Model), of(Grouping::Class));
        let priorities = match classes {
            Some(g) if header => g.labels.iter().map(|l| l.priority).collect(),
            _ => Vec::new(),
        };
        if models.is_none() && classes.is_none() {
            return Variants {
                templates: Vec::new(),
                models: 1,
                classes: 1,
                priorities,
            };
        }
        let count = |g: Option<&Group>| g.map_or(1, |g| g.labels.len().max(1));
        let (m, c) = (count(models), count(classes));
        let mut templates = Vec::with_capacity(m * c);
        for mi in 0..m {
            for ci in 0..c {
                let mut t = BodyTemplate::clone(base);
                if let Some(l) = models.and_then(|g| g.labels.get(mi)) {
                    t.model.clone_from(&l.name);
                }
                if let Some(p) = classes
                    .and_then(|g| g.labels.get(ci))
                    .and_then(|l| l.priority)
                    .filter(|_| body)
                {
                    t.extra
                        .insert("priority".into(), serde_json::Value::from(p));
                }
                templates.push(Arc::new(t));
            }
        }
        Variants {
            templates,
            models: m,
            classes: c,
            priorities,
        }
    }

    /// The priority header's value for a request with `labels`: its class's priority, when
    /// the target sends the header and the class has one.
    pub(super) fn header_priority(&self, labels: Labels) -> Option<i64> {
        let c = labels.get(Grouping::Class)?;
        self.priorities.get(usize::from(c)).copied().flatten()
    }

    /// The template of a request with `labels`, or `None` for a stage without a split.
    pub(super) fn of(&self, labels: Labels) -> Option<&BodyTemplate> {
        if self.templates.is_empty() {
            return None;
        }
        let m = usize::from(labels.get(Grouping::Model).unwrap_or(0)).min(self.models - 1);
        let c = usize::from(labels.get(Grouping::Class).unwrap_or(0)).min(self.classes - 1);
        self.templates.get(m * self.classes + c).map(Arc::as_ref)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Api, Label, PromptRef};

    fn label(name: &str, priority: Option<i64>) -> Label {
        Label {
            name: name.into(),
            weight: 1,
            priority,
            dataset: None,
        }
    }

    #[test]
    fn each_pair_of_labels_has_its_model_and_priority() {
        let base = Arc::new(BodyTemplate {
            api: Api::CHAT,
            model: "base".into(),
            ignore_eos: true,
            reasoning_effort: None,
            stream: true,
            extra: Default::default(),
        });
        let groups = [
            Group {
                by: Grouping::Model,
                labels: vec![label("base", None), label("lora-sql", None)],
            },
            Group {
                by: Grouping::Class,
                labels: vec![label("interactive", Some(0)), label("batch", Some(10))],
            },
        ];
        let v = Variants::new(&base, &groups, (true, false));
        let mut labels = Labels::default();
        labels.set(Grouping::Model, 1);
        labels.set(Grouping::Class, 1);
        let body = v.of(labels).unwrap().build(PromptRef::Text("hi"), 4);
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["model"], "lora-sql");
        assert_eq!(json["priority"], 10);
        labels.set(Grouping::Model, 0);
        labels.set(Grouping::Class, 0);
        let body = v.of(labels).unwrap().build(PromptRef::Text("hi"), 4);
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["model"], "base");
        assert_eq!(json["priority"], 0);
        assert!(v.header_priority(labels).is_none(), "no header asked for");
        assert!(Variants::new(&base, &[], (true, true)).of(labels).is_none());
    }

    #[test]
    fn a_header_priority_leaves_the_body_alone() {
        let base = Arc::new(BodyTemplate {
            api: Api::CHAT,
            model: "base".into(),
            ignore_eos: true,
            reasoning_effort: None,
            stream: true,
            extra: Default::default(),
        });
        let groups = [Group {
            by: Grouping::Class,
            labels: vec![label("interactive", Some(-5)), label("batch", None)],
        }];
        let v = Variants::new(&base, &groups, (false, true));
        let mut labels = Labels::default();
        labels.set(Grouping::Class, 0);
        assert_eq!(v.header_priority(labels), Some(-5));
        let body = v.of(labels).unwrap().build(PromptRef::Text("hi"), 4);
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(json.get("priority").is_none(), "{json}");
        labels.set(Grouping::Class, 1);
        assert_eq!(
            v.header_priority(labels),
            None,
            "a class without a priority"
        );
        let both = Variants::new(&base, &groups, (true, true));
        labels.set(Grouping::Class, 0);
        let body = both.of(labels).unwrap().build(PromptRef::Text("hi"), 4);
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            (json["priority"].as_i64(), both.header_priority(labels)),
            (Some(-5), Some(-5))
        );
    }
}
