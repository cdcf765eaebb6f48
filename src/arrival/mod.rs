//! Arrival processes: when open-loop requests leave, as offsets from the stage start. The plan
//! compiler calls [`schedule`] once per stage, ahead of the run. Closed loops have no schedule;
//! a concurrency ramp only staggers their workers' starts ([`ClientRamp`]).

mod client_ramp;
mod ramp;
mod schedule;

pub use client_ramp::ClientRamp;
pub use ramp::ramp_schedule;
pub use schedule::{ArrivalError, Horizon, MAX_ARRIVALS, schedule};
