#!/usr/bin/env bash
# Whether a steady-state window's intervals are honest, simulated: examples/steady_state_coverage.rs
# draws latencies whose neighbours are correlated (exp of a stationary AR(1) series, φ from 0 to
# 0.97: a queue that makes consecutive requests slow together), many seeded runs per case, and
# counts how often each 95 % interval holds the true percentile (known exactly):
#   - the batch interval the window's figures carry (`stats::batch_interval`: 5 to 20 batches
#     of requests in send order, the window's figure ± t·s/√b);
#   - the order-statistic interval that takes every request as independent (what a whole
#     stage's percentiles carry).
# With φ = 0 both should cover about 95 %; as φ grows the naive one falls far below it and the
# batch one should stay near it (a little under at φ = 0.97, where 20 batches of 200 requests
# are short beside the correlation). docs/metrics.md ("Steady state") quotes the figures.
#
#   scripts/steady-state.sh                 200 runs of 4,000 requests per case (about 10 min
#                                           unoptimised on a busy 2-core machine)
#   RUNS=1000 PROFILE=release scripts/steady-state.sh   tighter figures
#
# Prints figures; asserts nothing. Seeded: the same figures on every machine.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-200}
N=${N:-4000}
PROFILE=${PROFILE:-dev}
cargo build --profile "$PROFILE" --quiet --example steady_state_coverage
dir=debug
[ "$PROFILE" = dev ] || dir=$PROFILE
exec "target/$dir/examples/steady_state_coverage" --runs "$RUNS" --n "$N"
