//! The simulator's side of each API kind, one file per API below `apis/` (its request's
//! prompt, its stream's pieces, its non-streamed body: `wire::SimApi`), and which serves
//! which: each registered API kind (`protocol::REGISTRY`) with the side of the same name,
//! routed at `/v1` and the API's path.

pub(super) mod chat;
pub(super) mod completions;
// An API kind for tests only, the example of what adding one takes (feature `echo`;
// docs/architecture.md, "Adding an API kind"). Never in a released binary.
#[cfg(feature = "echo")]
mod echo;
mod embeddings;
mod pooled;
mod rerank;
mod responses;
mod score;

use super::wire::SimApi;
use crate::protocol::{Api, REGISTRY};

/// Every API the simulator serves.
const SIDES: &[&dyn SimApi] = &[
    &chat::Chat,
    &completions::Completions,
    &embeddings::Embeddings,
    &rerank::Rerank,
    &score::Score,
    &responses::Responses,
    #[cfg(feature = "echo")]
    &echo::Echo,
];

/// A registered API and the simulator's side of it.
#[derive(Clone, Copy)]
pub(crate) struct Served {
    pub api: Api,
    pub side: &'static dyn SimApi,
}

/// Every registered API the simulator has a side for, in registry order.
pub(crate) fn served() -> impl Iterator<Item = Served> {
    REGISTRY.iter().filter_map(|&api| {
        SIDES
            .iter()
            .find(|s| s.name() == api.as_str())
            .map(|&side| Served { api, side })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_api_has_a_simulator_side() {
        let served: Vec<Api> = served().map(|s| s.api).collect();
        assert_eq!(
            served, REGISTRY,
            "an API without a simulator side cannot be tested"
        );
        assert_eq!(
            SIDES.len(),
            REGISTRY.len(),
            "a side without a registered API"
        );
    }
}
