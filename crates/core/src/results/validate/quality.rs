//! The validator's rules for a stage's answer quality (`quality`, 0.3.0): each count a run can
//! reach and a part of the one it is counted in (correct of scored, scored and every flag of
//! checked, off the band of banded, identical of paired of checked), the accuracy and the
//! agreement shares with their intervals, and the scorer one of the scorers' names. A result past them would have an SLA read an accuracy
//! above 100 % or a report show a name infermeter never wrote.

use super::Checker;
use crate::metrics::{SCORERS, StageSummary};

impl Checker {
    pub(super) fn quality(&mut self, at: &str, s: &StageSummary) {
        let Some(q) = &s.quality else { return };
        let at = format!("{at}.quality");
        let parts = [
            ("scored", q.scored, q.checked),
            ("empty", q.empty, q.checked),
            ("cut", q.cut, q.checked),
            ("repetitive", q.repetitive, q.checked),
            ("refusals", q.refusals, q.checked),
            ("banded", q.banded, q.checked),
            ("clipped", q.clipped, q.checked),
        ];
        self.count(&format!("{at}.checked"), q.checked);
        for (name, n, of) in parts {
            self.at_most(&format!("{at}.{name}"), n, of, "the answers checked");
        }
        self.at_most(
            &format!("{at}.correct"),
            q.correct,
            q.scored,
            "the answers scored",
        );
        self.at_most(
            &format!("{at}.off_band"),
            q.off_band,
            q.banded,
            "the answers banded",
        );
        if let Some(a) = q.accuracy {
            self.share(&format!("{at}.accuracy"), a);
        }
        if let Some([low, high]) = q.accuracy_interval {
            self.share(&format!("{at}.accuracy_interval[0]"), low);
            self.share(&format!("{at}.accuracy_interval[1]"), high);
            if low > high {
                self.fail(
                    format!("{at}.accuracy_interval"),
                    low,
                    "its low end above its high",
                );
            }
        }
        if let Some(j) = &q.judge {
            self.judge(&format!("{at}.judge"), j);
        }
        if let Some(a) = &q.agreement {
            let at = format!("{at}.agreement");
            self.at_most(
                &format!("{at}.paired"),
                a.paired,
                q.checked,
                "the answers checked",
            );
            self.at_most(
                &format!("{at}.identical"),
                a.identical,
                a.paired,
                "the answers paired",
            );
            if let Some(v) = a.share {
                self.share(&format!("{at}.share"), v);
            }
            if let Some([low, high]) = a.interval {
                self.share(&format!("{at}.interval[0]"), low);
                self.share(&format!("{at}.interval[1]"), high);
            }
        }
        if let Some(name) = &q.scorer
            && !SCORERS.contains(&name.as_str())
        {
            self.fail(
                format!("{at}.scorer"),
                super::json(name),
                "not a scorer's name",
            );
        }
    }

    /// The judge's figures: a scale a judge can use, one count per score, their sum the
    /// scored answers, scored and failed of those sampled, a mean and interval on the scale.
    fn judge(&mut self, at: &str, j: &crate::metrics::JudgeTally) {
        if !(2..=100).contains(&j.scale) {
            self.fail(
                format!("{at}.scale"),
                j.scale,
                "a judge's scale runs 2..=100",
            );
            return;
        }
        if j.counts.len() > j.scale as usize {
            self.fail(
                format!("{at}.counts"),
                j.counts.len(),
                "more scores than the scale",
            );
        }
        let sum = j.counts.iter().fold(0u64, |a, &c| a.saturating_add(c));
        if sum != j.scored {
            self.fail(format!("{at}.scored"), j.scored, "not the sum of counts");
        }
        for (name, n) in [("calls", j.calls), ("cache_hits", j.cache_hits)] {
            self.count(&format!("{at}.{name}"), n);
        }
        let judged = j.scored.saturating_add(j.failures);
        self.at_most(
            &format!("{at}.scored"),
            judged,
            j.sampled,
            "the answers sampled",
        );
        let top = f64::from(j.scale);
        let on_scale = |v: f64| (1.0..=top).contains(&v);
        for (name, v) in [("mean", j.mean), ("interval[0]", j.interval.map(|i| i[0]))]
            .into_iter()
            .chain([("interval[1]", j.interval.map(|i| i[1]))])
        {
            if let Some(v) = v.filter(|&v| !on_scale(v)) {
                self.fail(format!("{at}.{name}"), v, "off the judge's scale");
            }
        }
        if let Some(c) = &j.cost {
            let at = format!("{at}.cost");
            for (name, v) in [
                ("total", c.total),
                ("input", c.input),
                ("output", c.output),
                ("input_per_million", c.input_per_million),
                ("output_per_million", c.output_per_million),
            ] {
                self.non_negative(&format!("{at}.{name}"), v);
            }
            // A report shows it beside the cost: the short printable word a scenario allows.
            if let Some(u) = c.currency.as_deref().filter(|u| {
                u.is_empty()
                    || u.chars().count() > 16
                    || u.chars().any(|ch| ch.is_control() || ch.is_whitespace())
            }) {
                self.fail(
                    format!("{at}.currency"),
                    super::json(u),
                    "a short printable word (16 characters at most)",
                );
            }
        }
    }
}
