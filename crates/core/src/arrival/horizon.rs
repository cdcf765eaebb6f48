//! How far a schedule runs ([`Horizon`]), the most arrivals one may have, and why one cannot
//! be drawn ([`ArrivalError`]): shared by the renewal processes and the ramp.

use serde::{Deserialize, Serialize};

use crate::units::Duration;

/// Largest schedule a stage may have.
pub const MAX_ARRIVALS: u64 = 100_000_000;

/// How far to schedule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Horizon {
    /// Exactly this many arrivals.
    Count(u64),
    /// Every arrival whose offset is strictly below this.
    Within(Duration),
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArrivalError {
    #[error("rate {0} is not a number of requests per second > 0")]
    BadRate(f64),
    #[error("rate {rate}/s with burstiness {burstiness} gives no gamma distribution")]
    BadGamma {
        rate: f64,
        burstiness: crate::units::Burstiness,
    },
    #[error(
        "{what} schedules more than {MAX_ARRIVALS} requests; lower the rate or shorten the stage"
    )]
    TooMany { what: String },
}
