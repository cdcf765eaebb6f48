#!/usr/bin/env bash
# How often the gate and `compare` reach the right verdict, measured rather than assumed:
# many runs of scenarios/bench/gate-power.kdl, each against its own `infermeter sim` process
# with step jitter (a fresh seed per run, as a real server's noise is not seeded), then the
# analysis in examples/gate_power.rs:
#   - each assertion's verdicts over every run: 20 % from the true TTFT p95 (pass and fail
#     sides) the same verdict every time, on the true p95 inconclusive;
#   - PAIRS pairs of identical runs through `compare` (default tolerance 5 %): how many are
#     flagged as regressed (the aim: at most 1 in 20);
#   - PAIRS pairs whose current run's simulator is 15 % slower (decode and prefill scaled):
#     how many are detected (the aim: at least 19 in 20);
#   - the smallest slowdown detected in 19 of 20 pairs, estimated by scaling the identical
#     pairs' current latencies (so the baseline's real run-to-run noise is kept);
#   - the same verdicts against the runs' own pooled p95 (the calibration run was made at
#     another time, and a busy machine's latencies drift), with the spread of the runs' p95
#     beside one run's interval.
#
#   scripts/gate-power.sh            60 s stages at 20 req/s, 20 pairs (about 35 min at JOBS=2)
#   scripts/gate-power.sh --short    15 s stages, 10 pairs (about 6 min)
#   PAIRS=20 DURATION=60s RATE=20 JOBS=2 KEEP=/tmp/gp scripts/gate-power.sh
#
# Builds the release binary first. Prints figures; asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-20}
DURATION=${DURATION:-60s}
RATE=${RATE:-20}
JOBS=${JOBS:-2}
if [[ "${1:-}" == "--short" ]]; then PAIRS=10; DURATION=15s; fi
BIN=target/release/infermeter
cargo build --release --quiet --bin infermeter --example gate_power
ANALYZE=target/release/examples/gate_power
# KEEP=DIR keeps every run's results there (to analyse again: gate_power analyze DIR).
if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    WORK=$(cd "$KEEP" && pwd)
    trap 'pkill -P $$ 2>/dev/null || true' EXIT
else
    WORK=$(mktemp -d)
    trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$WORK"' EXIT
fi

# One run: $1 = output dir, $2 = latency scale of the simulator, $3 = duration, $4 = seed.
one() {
    local out=$1 scale=$2 duration=$3 seed=$4
    local prefill decode per_seq
    prefill=$(awk -v s="$scale" 'BEGIN { printf "%dus", 50 * s }')
    decode=$(awk -v s="$scale" 'BEGIN { printf "%dus", 8000 * s }')
    per_seq=$(awk -v s="$scale" 'BEGIN { printf "%dus", 100 * s }')
    local log="$out.sim"
    "$BIN" sim --listen 127.0.0.1:0 --jitter 0.3 --seed "$seed" --prefill-per-token "$prefill" \
        --decode-base "$decode" --decode-per-seq "$per_seq" >"$log" 2>/dev/null &
    local sim=$!
    for _ in $(seq 100); do grep -q http "$log" 2>/dev/null && break; sleep 0.05; done
    local url
    url=$(grep -o 'http://[^ ]*' "$log" | head -1)
    "$BIN" run "$WORK/scenario.kdl" --param "url=$url" --param "rate=$RATE" \
        --param "duration=$duration" --out "$out" --quiet --no-plots >/dev/null 2>&1 || true
    kill "$sim" 2>/dev/null || true
    wait "$sim" 2>/dev/null || true
}
export -f one
export BIN WORK RATE

# Calibration: one long run with the thresholds unset, for the true p95.
sed -e 's/99991ms/1000000ms/; s/99992ms/0ms/; s/99993ms/1000000ms/' scenarios/bench/gate-power.kdl \
    >"$WORK/scenario.kdl"
long=$(awk -v d="${DURATION%s}" 'BEGIN { printf "%ds", d * 5 }')
echo "calibrating: one $long run at $RATE req/s…"
one "$WORK/calibration" 1 "$long" 1
P95=$("$ANALYZE" calibrate "$WORK/calibration/results.json")
pass=$(awk -v p="$P95" 'BEGIN { printf "%.3f", p * 1.25 }')
on=$(awk -v p="$P95" 'BEGIN { printf "%.3f", p }')
fail=$(awk -v p="$P95" 'BEGIN { printf "%.3f", p * 0.8 }')
echo "true TTFT p95 ≈ $P95 ms: thresholds $pass ms (pass), $on ms (on it), $fail ms (fail side)"
sed -e "s/99991ms/${pass}ms/; s/99992ms/${fail}ms/; s/99993ms/${on}ms/" scenarios/bench/gate-power.kdl \
    >"$WORK/scenario.kdl"

runs=$((2 * PAIRS))
echo "running $runs baseline runs and $PAIRS against a 15 % slower simulator, $DURATION each, $JOBS at a time…"
# shellcheck disable=SC2016 # the child shell expands its own arguments
{
    for i in $(seq -w 1 "$runs"); do echo "$WORK/base-$i 1 $DURATION 1$i"; done
    for i in $(seq -w 1 "$PAIRS"); do echo "$WORK/slow-$i 1.15 $DURATION 2$i"; done
} | xargs -P "$JOBS" -L 1 bash -c 'one "$0" "$1" "$2" "$3"'

echo
"$ANALYZE" analyze "$WORK"
