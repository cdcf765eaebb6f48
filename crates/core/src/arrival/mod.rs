//! Arrival processes: how a stage's requests arrive ([`ArrivalSpec`], as the scenario states it)
//! and when open-loop requests leave, as offsets from the stage start. The plan compiler counts
//! each stage's schedule ahead of the run ([`extent`]); the runner draws the same offsets again,
//! one at a time, as it sends ([`offsets`]). Closed loops have no schedule; a concurrency ramp
//! only staggers their workers' starts ([`ClientRamp`]). Searches choose their next load from
//! the probes so far ([`next_load`]). A stage of a sweep or search is one [`LoadPoint`].

mod client_ramp;
mod horizon;
mod point;
mod ramp;
mod schedule;
mod search;
mod spec;

pub use client_ramp::ClientRamp;
pub use horizon::{ArrivalError, Horizon, MAX_ARRIVALS};
pub use point::{LoadPoint, PointKind};
pub use schedule::{Extent, Offsets, extent, offsets, schedule};
pub use search::{SearchAxis, SearchSpec, StopReason, next_clients, next_load, next_rate};
pub use spec::{ArrivalKind, ArrivalSpec};
