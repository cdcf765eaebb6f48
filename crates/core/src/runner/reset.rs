//! `reset-cache`: the server's prompt cache dropped before each stage, at every URL of the
//! target, and the note each stage's summary carries about it.

use super::stage::StageRunner;
use crate::plan::StagePlan;
use crate::protocol::CacheReset;

impl StageRunner<'_> {
    /// `reset-cache`: drops the server's prompt cache before a stage; a note saying so, or
    /// saying plainly that it was not dropped (and a warning) when no endpoint did it. A
    /// server that declines while requests run on it is asked again for up to the stage's
    /// drain time.
    pub(super) async fn reset_cache(&self, stage: &StagePlan) -> Option<String> {
        let how = self.plan.target.run.reset_cache?;
        let routes = self.router.all();
        if let [only] = routes {
            return Some(self.reset_one(only, stage, how).await);
        }
        let mut notes = Vec::with_capacity(routes.len());
        for (i, route) in routes.iter().enumerate() {
            let note = self.reset_one(route, stage, how).await;
            let url = crate::redact::secrets(&route.base_url);
            notes.push(format!("URL {i} ({url}): {note}"));
        }
        Some(notes.join("; "))
    }

    /// [`reset_cache`](Self::reset_cache) at one URL.
    async fn reset_one(
        &self,
        route: &super::route::Route,
        stage: &StagePlan,
        how: CacheReset,
    ) -> String {
        let resolved = self.reset.lock().ok().and_then(|r| *r).unwrap_or(how);
        let root = crate::protocol::server_root(&route.base_url);
        let wait = super::server::ResetWait {
            budget: stage.drain_timeout.as_std(),
            interrupt: &self.opts.interrupt,
        };
        match super::server::reset_cache(route.client.http(), &root, resolved, &wait).await {
            Ok((kind, done)) => {
                if let Ok(mut r) = self.reset.lock() {
                    *r = Some(kind);
                }
                format!("asked the server to drop its prompt cache before the stage ({done})")
            }
            Err(why) => {
                let what = match why {
                    super::server::ResetError::Declined { .. } => "the server declined",
                    _ => "no endpoint answered",
                };
                self.opts.observer.warning(&format!(
                    "reset-cache \"{}\" before `{}`: {what} ({why}); the stage runs on whatever \
                     the server has cached",
                    how.as_str(),
                    stage.name
                ));
                format!(
                    "the server's prompt cache was NOT dropped before the stage: reset-cache \
                     \"{}\" failed ({why})",
                    how.as_str()
                )
            }
        }
    }
}
