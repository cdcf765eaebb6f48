//! `network { … }`: a userspace TCP proxy between the client and the target that emulates a
//! link (delay, jitter, bandwidth, loss as TCP feels it), seeded by the scenario, on a thread
//! of its own; see `docs/network.md`. The schedule's arithmetic is `schedule.rs`, the sockets
//! `proxy.rs`, pointing the run's URLs at it `urls.rs`.

mod proxy;
mod schedule;
mod urls;

use proxy::Proxy;
use urls::through;

use super::error::RunError;
use crate::metrics::NetworkSummary;
use crate::plan::Plan;

/// `e` naming the target's URLs where it named the proxy's, when there is one.
pub fn unproxied(shaping: Option<&Shaping>, e: RunError) -> RunError {
    match shaping {
        Some(s) => s.unproxied(e),
        None => e,
    }
}

/// The proxy of a run whose target has `network`, and what to tell the result.
pub struct Shaping {
    proxy: Proxy,
    shape: crate::protocol::NetworkShape,
    /// Each proxied base URL with the target's own (credentials masked), for errors.
    urls: Vec<(String, String)>,
}

impl Shaping {
    /// Starts the proxy in front of each of `base_urls` when the plan's target asks for one,
    /// and returns the URLs the client is to use (the proxy's, else the same).
    pub fn start(
        plan: &Plan,
        base_urls: Vec<String>,
    ) -> Result<(Vec<String>, Option<Shaping>), RunError> {
        let Some(shape) = plan.target.run.network else {
            return Ok((base_urls, None));
        };
        let split = base_urls
            .iter()
            .map(|u| {
                through(u).ok_or_else(|| RunError::NetemUrl {
                    url: crate::redact::secrets(u).into_owned(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let upstreams = split.iter().map(|s| s.upstream.clone()).collect();
        let proxy = Proxy::start(upstreams, shape, plan.seed).map_err(RunError::Netem)?;
        let urls: Vec<String> = split
            .iter()
            .zip(&proxy.addrs)
            .map(|(s, a)| s.via(*a))
            .collect();
        let shown = base_urls
            .iter()
            .map(|u| crate::redact::secrets(u).into_owned());
        let shaping = Shaping {
            proxy,
            shape,
            urls: urls.iter().cloned().zip(shown).collect(),
        };
        Ok((urls, Some(shaping)))
    }

    /// `e` naming the target's URLs where it named the proxy's: what the user wrote is what
    /// an error shows.
    pub fn unproxied(&self, mut e: RunError) -> RunError {
        self.fix(&mut e);
        e
    }

    fn fix(&self, e: &mut RunError) {
        match e {
            RunError::Unreachable { url, .. }
            | RunError::EndsInApiPath { url, .. }
            | RunError::NotApiBase { url, .. }
            | RunError::NoAnswer { url, .. }
            | RunError::NoModel { url, .. } => {
                if let Some((proxied, shown)) = self.urls.iter().find(|(p, _)| url.starts_with(p)) {
                    *url = format!(
                        "{shown}{} (through the network proxy)",
                        &url[proxied.len()..]
                    );
                }
            }
            RunError::Replica { source, .. } => self.fix(source),
            _ => {}
        }
    }

    /// The proxy's thread, whose CPU time is not the client's.
    pub fn thread(&self) -> Option<super::cpu::ThreadId> {
        self.proxy.thread
    }

    /// Stops the proxy and sums up what it did.
    pub fn finish(self) -> NetworkSummary {
        let tally = self.proxy.finish();
        tally.summary(self.shape)
    }
}
