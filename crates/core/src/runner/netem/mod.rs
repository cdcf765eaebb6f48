//! `network { … }`: a userspace TCP proxy between the client and the target that emulates a
//! link (delay, jitter, bandwidth, loss as TCP feels it), seeded by the scenario, on a thread
//! of its own; see `docs/network.md`. The schedule's arithmetic is `schedule.rs`, the sockets
//! `proxy.rs`, pointing the run's URLs at it `urls.rs`.

mod proxy;
mod schedule;
mod urls;

use proxy::Proxy;
use schedule::fingerprint;
use urls::through;

use super::error::RunError;
use crate::metrics::NetworkSummary;
use crate::plan::Plan;

/// The proxy of a run whose target has `network`, and what to tell the result.
pub struct Shaping {
    proxy: Proxy,
    shape: crate::protocol::NetworkShape,
    seed: u64,
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
        let urls = split
            .iter()
            .zip(&proxy.addrs)
            .map(|(s, a)| s.via(*a))
            .collect();
        let seed = plan.seed;
        Ok((urls, Some(Shaping { proxy, shape, seed })))
    }

    /// The proxy's thread, whose CPU time is not the client's.
    pub fn thread(&self) -> Option<super::cpu::ThreadId> {
        self.proxy.thread
    }

    /// Stops the proxy and sums up what it did.
    pub fn finish(self) -> NetworkSummary {
        let tally = self.proxy.finish();
        tally.summary(self.shape, fingerprint(&self.shape, self.seed))
    }
}
