#!/usr/bin/env bash
# The memory one stage's aggregation keeps (the collector's fold and the steady-state window),
# counted by an allocator rather than sampled from RSS: the same bytes on every machine and
# load. Runs crates/core/examples/steady_memory.rs, which feeds 10,000 and then 10,000,000
# synthetic records (1,000 a second: 10 s and 2.8 hours of stage) through `StageAggregator`
# and prints the live heap it keeps after each, with the window it found; then checks the
# growth from the first count to the last against a budget.
#
#   scripts/steady-memory.sh                     (builds the example with --release)
#   RATE=N scripts/steady-memory.sh              (records a second; default 1000)
#   COUNTS="10000 1000000 10000000" scripts/steady-memory.sh   (the counts; first to last)
#   BUDGET=BYTES scripts/steady-memory.sh        (fails, exit 1, when the kept memory grows by
#       more than BYTES from the first count to the last; default 33554432, 32 MiB: the
#       slices' bound, 16 MiB, twice over for the rest of the aggregation)
#
# Takes about a minute on one core after the build (10 million records).
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-1000}
COUNTS=${COUNTS:-10000 10000000}
BUDGET=${BUDGET:-33554432}
[[ $BUDGET =~ ^[0-9]+$ ]] || { echo "BUDGET must be a whole number, not '$BUDGET'" >&2; exit 2; }
read -r -a counts <<<"$COUNTS"
OUT=$(cargo run --quiet --release -p infermeter-core --example steady_memory -- "$RATE" "${counts[@]}")
echo "$OUT"
kept=$(grep -o 'kept *[0-9]* bytes' <<<"$OUT" | grep -o '[0-9]*')
first=$(head -1 <<<"$kept")
last=$(tail -1 <<<"$kept")
GROWTH=$(( last - first ))
echo "growth from ${counts[0]} to ${counts[-1]} records: $GROWTH bytes"
if (( GROWTH > BUDGET )); then
    echo "over budget: the kept memory grew by $GROWTH bytes, budget $BUDGET (BUDGET=N to change it)" >&2
    exit 1
fi
echo "within budget: $GROWTH <= $BUDGET"
