//! Arrival processes: when open-loop requests leave, as offsets from the stage start. The plan
//! compiler counts each stage's schedule ahead of the run ([`extent`]); the runner draws the
//! same offsets again, one at a time, as it sends ([`offsets`]). Closed loops have no schedule;
//! a concurrency ramp only staggers their workers' starts ([`ClientRamp`]).

mod client_ramp;
mod ramp;
mod schedule;

pub use client_ramp::ClientRamp;
pub use schedule::{
    ArrivalError, Extent, Horizon, MAX_ARRIVALS, Offsets, extent, offsets, schedule,
};
