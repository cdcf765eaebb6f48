//! The validator's rules for a target with several URLs (schema 3): `target.routes` lists at
//! least two, each weighed at least 1, and every stage's `per_url` names one of them at most
//! once, its counts adding up and within the stage's, its share a share and its
//! distributions counted by its ok requests; and, alike, every stage's `per_depth` (agentic
//! subagents by depth).

use super::Checker;
use crate::metrics::{SliceFigures, StageSummary};
use crate::results::Results;

impl Checker {
    /// `target.routes` and every stage's (and round's) `per_url` against it.
    pub(super) fn urls(&mut self, r: &Results) {
        let listed = r
            .target
            .routes
            .as_ref()
            .map_or(0, |routes| routes.urls.len());
        if let Some(routes) = &r.target.routes {
            if routes.urls.len() < 2 {
                self.fail("target.routes.urls", routes.urls.len(), "at least two URLs");
            }
            for (i, u) in routes.urls.iter().enumerate() {
                if u.weight == 0 {
                    self.fail(format!("target.routes.urls[{i}].weight"), 0, "at least 1");
                }
            }
        }
        let stages = r.warmup.iter().map(|w| ("warmup".to_string(), w));
        let stages = stages.chain(
            r.stages
                .iter()
                .enumerate()
                .map(|(i, s)| (format!("stages[{i}]"), s)),
        );
        for (at, s) in stages {
            self.stage_urls(&at, s, listed);
            self.stage_depths(&at, s);
        }
    }

    /// `per_depth`: depths from 1 up, each once, their counts adding up and within the
    /// stage's, their distributions counted by their ok turns.
    fn stage_depths(&mut self, at: &str, s: &StageSummary) {
        let mut sent = 0u64;
        let mut last = 0u8;
        for (i, d) in s.per_depth.iter().enumerate() {
            let at = format!("{at}.per_depth[{i}]");
            if d.depth <= last {
                self.fail(
                    format!("{at}.depth"),
                    d.depth,
                    "depths from 1 up, each once",
                );
            }
            last = d.depth;
            self.slice(&at, &d.figures, "the depth's ok turns");
            sent = sent.saturating_add(d.figures.sent);
        }
        self.at_most(
            &format!("{at}.per_depth"),
            sent,
            s.requests.sent,
            "the stage sent",
        );
    }

    /// A slice's figures (a URL's, a depth's): counts that add up, a share that is one, and
    /// distributions counted by `whose` ok requests.
    fn slice(&mut self, at: &str, f: &SliceFigures, whose: &str) {
        for (name, n) in [("sent", f.sent), ("ok", f.ok), ("failed", f.failed)] {
            self.count(&format!("{at}.{name}"), n);
        }
        if f.ok.checked_add(f.failed) != Some(f.sent) {
            self.fail(
                format!("{at}.failed"),
                f.failed,
                format!("ok ({}) + failed ≠ sent ({})", f.ok, f.sent),
            );
        }
        if let Some(share) = f.cached_share {
            self.share(&format!("{at}.cached_share"), share);
        }
        for (m, d) in f.latency.iter() {
            self.dist(&format!("{at}.{}", m.key()), d);
            self.at_most(&format!("{at}.{}.count", m.key()), d.count, f.ok, whose);
        }
    }

    fn stage_urls(&mut self, at: &str, s: &StageSummary, listed: usize) {
        let mut sent = 0u64;
        let mut last: Option<u16> = None;
        for (i, u) in s.per_url.iter().enumerate() {
            let at = format!("{at}.per_url[{i}]");
            if usize::from(u.url) >= listed {
                self.fail(
                    format!("{at}.url"),
                    u.url,
                    format!("not an index of target.routes.urls ({listed} listed)"),
                );
            }
            if last.is_some_and(|l| l >= u.url) {
                self.fail(
                    format!("{at}.url"),
                    u.url,
                    "URLs in ascending order, each once",
                );
            }
            last = Some(u.url);
            self.slice(&at, &u.figures, "the URL's ok requests");
            sent = sent.saturating_add(u.figures.sent);
        }
        self.at_most(
            &format!("{at}.per_url"),
            sent,
            s.requests.sent,
            "the stage sent",
        );
        for (i, round) in s.rounds.iter().enumerate() {
            self.stage_urls(&format!("{at}.rounds[{i}]"), round, listed);
        }
    }
}
