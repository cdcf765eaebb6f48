//! The statistics behind a gate you can trust: whole histograms stored losslessly, a
//! distribution-free confidence interval for every percentile, the bootstrap of a percentile's
//! change between two runs, and the median across repeated rounds. The methods and their
//! assumptions are in `docs/statistics.md`.

mod batch;
mod binomial;
mod bootstrap;
mod error;
pub mod hist;
mod need;
mod normal;
mod paired;
mod quantile;
mod rounds;
mod sequential;
mod tails;

pub use batch::{
    BatchCi, MAX_BATCHES, MIN_BATCHES, batch_interval, batch_interval_of, batch_size_for,
    t_quantile,
};
pub use binomial::{Ranks, one_sided_ranks, order_statistic_ranks, samples_needed};
pub use bootstrap::{
    BootstrapOptions, ChangeCi, DEFAULT_SEED, Direction, MIN_REPLICATES, RelativeChange, Verdict,
    decide, relative_change,
};
pub use error::StatsError;
pub use need::{Build, Clear, Shares, first_deciding, mean_need, proportion_need, quantile_need};
pub use normal::{MEAN_MIN_N, mean_interval, more_samples, wilson, z};
pub use paired::{Pairs, mcnemar_exact, paired_difference};
pub use quantile::{
    QuantileCi, QuantileInterval, SamplesToDecide, one_sided_bounds, quantile_interval,
    samples_to_decide,
};
pub use rounds::{RoundsInterval, rounds_median};
pub use sequential::{
    BetaMixture, DEFAULT_TUNING, SequentialRanks, mean_sequence, mean_sequence_half_width,
    proportion_sequence, quantile_ranks, quantile_sequence, sequence_tuning,
};
pub use tails::{NORMAL_APPROX_MIN_N, NORMAL_APPROX_MIN_VARIANCE};
