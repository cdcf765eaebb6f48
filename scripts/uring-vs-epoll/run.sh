#!/usr/bin/env bash
# Issue #41's io_uring experiment: epoll against io_uring, 3 runs a case (alternating), then
# one `strace -c -f` run a case and mode for the system-call counts (strace slows the calls:
# counts only). Client on CPU 0, simulator on CPU 1.
#   scripts/uring-vs-epoll/run.sh [SIMULATOR_BINARY] [OUT_DIR]   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../.."
SIMBIN=${1:-target/debug/infermeter}
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/work/tgt-uring}
cargo build --release --quiet --manifest-path scripts/uring-vs-epoll/Cargo.toml
BIN=$CARGO_TARGET_DIR/release/uring-vs-epoll
taskset -c 1 "$SIMBIN" sim --listen 127.0.0.1:0 --prefill-per-token 0ms --decode-base 10ms \
    --decode-per-seq 0ms --max-running 4096 --kv-capacity 100000000 >"$OUT/sim.out" 2>/dev/null &
SIM=$!
trap 'kill -INT $SIM 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q http "$OUT/sim.out" 2>/dev/null && break; sleep 0.1; done
URL=$(grep -o 'http://[^ ]*' "$OUT/sim.out" | head -1)
# conns:requests, each run about 20-30 s on the 2-core machine
CASES=${CASES:-"10:250 100:2500 500:12500 1000:20000"}
{ date -u; uname -r; cat /proc/loadavg; } | tee "$OUT/env"
for case in $CASES; do
    c=${case%:*} r=${case#*:}
    for rep in 1 2 3; do
        for m in epoll uring; do
            line=$(taskset -c 0 "$BIN" --mode "$m" --conns "$c" --requests "$r" --url "$URL")
            echo "$line rep=$rep load=$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/runs"
        done
    done
done
for case in $CASES; do
    c=${case%:*} r=${case#*:}
    for m in epoll uring; do
        taskset -c 0 strace -c -f -o "$OUT/strace.$c.$m" "$BIN" --mode "$m" --conns "$c" \
            --requests $((r / 5)) --url "$URL" | tee -a "$OUT/strace-runs"
    done
done
echo "results in $OUT"
