//! The validator's rules for a stage split by `model` or `class` (`groups`, `priority`,
//! schema 3): each label's summary holds as a stage does; the labels of one grouping share
//! out the stage's requests (their `sent` add up to the stage's); label names are ones an SLA
//! selector can name; the priority check's pairs name classes the stage has, with finite
//! figures. A result that breaks them would report requests no label sent, or a class that
//! was never there.

use super::Checker;
use crate::metrics::StageSummary;
use crate::protocol::{Grouping, valid_label};

impl Checker {
    pub(super) fn groups(&mut self, at: &str, s: &StageSummary) {
        for (i, g) in s.groups.iter().enumerate() {
            let at = format!("{at}.groups[{i}]");
            if !valid_label(&g.label) {
                self.fail(
                    format!("{at}.label"),
                    super::json(&g.label),
                    "1 to 128 letters, digits and . _ - / :",
                );
            }
            self.stage(&format!("{at}.summary"), &g.summary);
        }
        for by in Grouping::ALL {
            let mut parts = s.groups.iter().filter(|g| g.by == by).peekable();
            if parts.peek().is_none() {
                continue;
            }
            let sent: u64 = parts.map(|g| g.summary.requests.sent).sum();
            if sent != s.requests.sent {
                self.fail(
                    format!("{at}.groups"),
                    sent,
                    format!(
                        "the {by}s' requests add up to {sent}, the stage sent {}",
                        s.requests.sent
                    ),
                );
            }
        }
        let Some(p) = &s.priority else { return };
        for (i, pair) in p.pairs.iter().enumerate() {
            let at = format!("{at}.priority.pairs[{i}]");
            for name in [&pair.higher, &pair.lower] {
                if !s
                    .groups
                    .iter()
                    .any(|g| g.by == Grouping::Class && g.label == *name)
                {
                    self.fail(at.clone(), super::json(name), "not a class of the stage");
                }
            }
            self.non_negative(&format!("{at}.higher_ms"), pair.higher_ms);
            self.non_negative(&format!("{at}.lower_ms"), pair.lower_ms);
        }
    }
}
