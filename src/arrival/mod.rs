//! Arrival processes: when open-loop requests leave, as offsets from the stage start. The plan
//! compiler calls [`schedule`] once per stage, ahead of the run.

mod ramp;
mod schedule;

pub use ramp::ramp_schedule;
pub use schedule::{ArrivalError, Horizon, MAX_ARRIVALS, schedule};
