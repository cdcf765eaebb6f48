//! Process exit codes: a public contract that CI scripts rely on (see `docs/ci.md`).

/// Every SLA assertion held (or the command succeeded).
pub const OK: i32 = 0;
/// An SLA assertion failed, `compare` found a regression, or a run that must qualify under
/// its MLPerf preset (`require=#true`) does not.
pub const SLA_FAILED: i32 = 1;
/// The scenario or the command line is invalid.
pub const INVALID: i32 = 2;
/// The run could not be carried out: target unreachable, I/O error, interrupted.
pub const RUN_ERROR: i32 = 3;
/// The gate is inconclusive: no assertion failed, but at least one could not be decided (its
/// interval straddles the threshold, too few samples, an untrusted stage) and the policy
/// (`--inconclusive`, default `inconclusive`) says to report that rather than pass or fail.
pub const INCONCLUSIVE: i32 = 4;
