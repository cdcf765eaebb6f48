//! Arrival processes: when open-loop requests leave, as offsets from the stage start. The plan
//! compiler calls [`schedule`] once per stage, ahead of the run.

mod schedule;

pub use schedule::{ArrivalError, Horizon, MAX_ARRIVALS, schedule};
