#!/usr/bin/env bash
# Instructions the client spends per request, counted by valgrind's callgrind: unlike CPU
# time, the count does not depend on what else the machine is doing, so it compares two
# builds of the client on a noisy machine. Kernel time (sockets) is not counted.
#
#   scripts/client-instructions.sh [BINARY]     (default: target/release/infermeter)
#   SCENARIO=FILE scripts/client-instructions.sh  (default: scenarios/bench/open-loop.kdl; a
#       copy with another telemetry block, e.g. `otlp` or `trace-context #false`, measures
#       what that costs per request)
#   CPUS=N scripts/client-instructions.sh       (runs the client with `--cpus N`: with N > 1,
#       its shards; callgrind runs their threads one at a time, so the count is their sum)
#   KEEP=DIR scripts/client-instructions.sh      (keeps the two runs' callgrind files in DIR,
#       cg.5 and cg.15: `callgrind_annotate --inclusive=yes` on each, function by function,
#       and their difference divided by the requests' is a function's cost per request;
#       best with the `profiling` build, which has symbols)
#   BUDGET=N scripts/client-instructions.sh     (fails, exit 1, when the figure is over N;
#       default 140000: the budget of docs/performance.md, "Reproduce")
#
# Runs the bench scenario at 200 req/s against a zero-latency simulator twice, for 1,000 and
# 3,000 requests, under callgrind, and prints the difference per request (start-up cancels).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/infermeter}
SCENARIO=${SCENARIO:-scenarios/bench/open-loop.kdl}
BUDGET=${BUDGET:-140000}
[[ $BUDGET =~ ^[0-9]+$ ]] || { echo "BUDGET must be a whole number, not '$BUDGET'" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
[ -x "$BIN" ] || { echo "build first: cargo build --release" >&2; exit 1; }
DIR=$(mktemp -d)
trap 'kill -INT $SIM 2>/dev/null || true; [ -n "${KEEP:-}" ] && cp "$DIR"/cg.* "$KEEP"/; rm -rf "$DIR"' EXIT
"$BIN" sim --listen 127.0.0.1:0 --prefill-per-token 0ms --decode-base 0ms --decode-per-seq 0ms \
    --max-running 4096 --kv-capacity 100000000 >"$DIR/sim.out" 2>/dev/null &
SIM=$!
for _ in $(seq 50); do grep -q http "$DIR/sim.out" 2>/dev/null && break; sleep 0.1; done
URL=$(grep -o 'http://[^ ]*' "$DIR/sim.out" | head -1)
count() { # seconds -> instructions
    valgrind --tool=callgrind --callgrind-out-file="$DIR/cg.$1" "$BIN" run \
        "$SCENARIO" --param "url=$URL" --param rate=200 --param "duration=$1s" \
        --quiet --no-plots ${CPUS:+--cpus "$CPUS"} --out "$DIR/out.$1" >/dev/null 2>"$DIR/vg.$1"
    local sent
    sent=$(grep -o '"sent": *[0-9]*' "$DIR/out.$1/results.json" | head -1 | grep -o '[0-9]*$')
    echo "$(grep -o 'Collected : [0-9]*' "$DIR/vg.$1" | grep -o '[0-9]*$') $sent"
}
read -r i1 n1 < <(count 5)
read -r i2 n2 < <(count 15)
echo "requests: $n1 and $n2; instructions: $i1 and $i2"
PER=$(( (i2 - i1) / (n2 - n1) ))
echo "client instructions per request: $PER"
if (( PER > BUDGET )); then
    echo "over budget: $PER instructions per request, budget $BUDGET (BUDGET=N to change it)" >&2
    exit 1
fi
echo "within budget: $PER <= $BUDGET"
