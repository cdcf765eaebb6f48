#!/usr/bin/env bash
# How `until-decided` stages decide, simulated: examples/until_decided_sim.rs runs a stage of
# 20 requests/s (lognormal latencies, median 1 s; looks once a second at the completed
# requests, the in-flight ones drained at the stop) many times with a fixed seed per run, and
# judges it on the same confidence sequences the verdicts use (`stats::proportion_sequence`,
# `stats::quantile_sequence`). It prints:
#   - with the true value on the threshold, the share of runs that decided anything (every
#     decision is then wrong): the confidence sequence's, against the nominal 5 %, and that of
#     a fixed 95 % interval looked at as often, which is what the sequence is there to avoid;
#   - 20 % (and less) from the threshold: how often the right verdict was reached, how many
#     requests it took (median and 90th percentile), and the fixed count whose one interval
#     decides rightly in 50 % and 90 % of runs.
#
#   scripts/until-decided.sh              1,000 runs per case (a few minutes in release)
#   RUNS=200 scripts/until-decided.sh     quicker
#   TUNE=min|max|N scripts/until-decided.sh   tune the sequences for the minimum, the maximum
#                                             or N requests (default: their geometric mean)
#   LOOK=prefix scripts/until-decided.sh      looks also judge the complete send-order prefix
#                                             (as the runner does: statistics.md, "The complete prefix")
#
# Prints figures; asserts nothing. Seeded: the same figures on every machine.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-1000}
cargo build --release --quiet --example until_decided_sim
exec target/release/examples/until_decided_sim --runs "$RUNS"
