//! A stage sent by shards (`--cpus N`, N > 1; see `shards.rs`): what each shard's requests
//! share, made from shard 0's, and each shard's share of the warm connections, opened in
//! its own pools on its own runtime.

use std::sync::Arc;

use tokio_util::task::TaskTracker;

use super::collect::Collector;
use super::counters::{Occupancy, Own};
use super::load::Senders;
use super::route::Router;
use super::send::StageShared;
use super::shards::Shards;
use super::stage::StageRunner;
use super::stage_plan::pool_warmth;
use super::target::warm_pool;
use crate::plan::{Load, StagePlan};

impl StageRunner<'_> {
    /// The shards that send `stage`: the run's, when it has several and the stage is an
    /// open or a closed loop.
    pub(super) fn sharded(&self, stage: &StagePlan) -> Option<&Shards> {
        let shards = self.opts.shards.as_deref().filter(|s| s.len() > 1)?;
        let loop_of_requests = matches!(stage.load, Load::Open { .. } | Load::Closed { .. });
        (loop_of_requests && self.shard_routers.len() == shards.len()).then_some(shards)
    }

    /// Who sends the stage: `base` alone (on this runtime), or it on shard 0 and a copy on
    /// each other shard, with that shard's routes, record channel and counters.
    pub(super) fn senders<'s>(
        &self,
        base: StageShared,
        collector: &Collector,
        sharded: Option<&'s Shards>,
    ) -> Senders<'s> {
        let n = sharded.map_or(1, Shards::len);
        let shared = match sharded {
            Some(_) => (0..n)
                .map(|k| base.for_shard(k, &self.shard_routers[k], collector))
                .collect(),
            None => vec![base],
        };
        let trackers: Vec<TaskTracker> = (0..n)
            .map(|_| {
                let t = TaskTracker::new();
                // Closing only lets `wait` finish once the tracker is empty; tasks can still
                // be spawned. Nothing waits before sending is over, so an early empty moment
                // cannot end a stage.
                t.close();
                t
            })
            .collect();
        Senders {
            shared: shared.into_iter().map(Arc::new).collect::<Vec<_>>(),
            trackers,
            shards: sharded,
        }
    }

    /// Each shard opens its share of the stage's warm connections in its own pools, on its
    /// own runtime (a connection belongs to the reactor it was opened on).
    pub(super) async fn warm_shards(&self, stage: &StagePlan, shards: &Shards) {
        let limit = self.warm_limit();
        let n = shards.len();
        let each = pool_warmth(stage).div_ceil(n);
        let warms: Vec<_> = (0..n)
            .map(|k| {
                let router = self.shard_routers[k].clone();
                let interrupt = self.opts.interrupt.clone();
                shards.handle(k).spawn(async move {
                    let warm = router.all().iter().map(|route| {
                        warm_pool(&route.client, &route.base_url, each, limit, &interrupt)
                    });
                    futures_util::future::join_all(warm).await;
                })
            })
            .collect();
        futures_util::future::join_all(warms).await;
    }
}

impl StageShared {
    /// This stage's sending on shard `k`: the same plan, stage and stage-wide parts (the
    /// judge, the answers' file, the salt), with the shard's own routes (so pools), record
    /// channel, in-flight count and occupancy, an interrupt token of its own under the stage's
    /// and a cancel of its own (a token's or a cancel's waiters are kept under a lock: each
    /// shard waits on its own).
    fn for_shard(&self, k: usize, router: &Arc<Router>, collector: &Collector) -> StageShared {
        StageShared {
            plan: self.plan.clone(),
            stage: self.stage.clone(),
            router: router.clone(),
            template: self.template.clone(),
            variants: self.variants.clone(),
            factory: self.factory.clone(),
            hooks: self.hooks.clone(),
            quality: self.quality.clone(),
            answers: self.answers.clone(),
            agree_with: self.agree_with.clone(),
            judge: self.judge.clone(),
            t0: self.t0,
            tx: collector.tx[k].clone(),
            interrupt: self.interrupt.child_token(),
            cancel: Arc::default(),
            in_flight: Own::default(),
            occupancy: Arc::new(Occupancy::default()),
            started: self.started.clone(),
            shard: k,
            salt: self.salt.clone(),
            test_send_lag: self.test_send_lag,
            trace: self.trace,
        }
    }
}
