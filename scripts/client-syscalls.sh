#!/usr/bin/env bash
# System calls the client makes per request, counted by `strace -c -f`: like
# client-instructions.sh, two runs (1,000 and 3,000 requests at 200 req/s against a
# zero-latency simulator) and the difference per request, so start-up cancels. strace slows
# the client, which changes how many events each read finds, so the counts are upper bounds
# for the same load without it.
#
#   scripts/client-syscalls.sh [BINARY]     (default: target/release/infermeter)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/infermeter}
command -v strace >/dev/null || { echo "strace is not installed (apt-get install strace)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "build first: cargo build --release" >&2; exit 1; }
DIR=$(mktemp -d)
trap 'kill -INT $SIM 2>/dev/null || true; rm -rf "$DIR"' EXIT
"$BIN" sim --listen 127.0.0.1:0 --prefill-per-token 0ms --decode-base 0ms --decode-per-seq 0ms \
    --max-running 4096 --kv-capacity 100000000 >"$DIR/sim.out" 2>/dev/null &
SIM=$!
for _ in $(seq 50); do grep -q http "$DIR/sim.out" 2>/dev/null && break; sleep 0.1; done
URL=$(grep -o 'http://[^ ]*' "$DIR/sim.out" | head -1)
count() { # seconds -> "requests" and the strace summary in $DIR/st.$1
    strace -c -f -o "$DIR/st.$1" "$BIN" run \
        scenarios/bench/open-loop.kdl --param "url=$URL" --param rate=200 --param "duration=$1s" \
        --quiet --no-plots --out "$DIR/out.$1" >/dev/null 2>&1 || true
    grep -o '"sent": *[0-9]*' "$DIR/out.$1/results.json" | head -1 | grep -o '[0-9]*$'
}
n1=$(count 5)
n2=$(count 15)
echo "requests: $n1 and $n2"
echo "system calls per request (calls in the 15 s run minus the 5 s run, over the requests between):"
# strace -c rows: % time, seconds, usecs/call, calls, [errors], syscall
calls() { awk '$NF != "total" && $4 ~ /^[0-9]+$/ { print $NF, $4, ($5 ~ /^[0-9]+$/ ? $5 : 0) }' "$1"; }
join -a1 -a2 -e0 -o 0,1.2,1.3,2.2,2.3 <(calls "$DIR/st.5" | sort) <(calls "$DIR/st.15" | sort) |
    awk -v n="$(( n2 - n1 ))" '{ d = ($4 - $2) / n; e = ($5 - $3) / n; t += d;
        if (d >= 0.05) printf "  %-16s %6.2f  (of them failed, e.g. EAGAIN: %.2f)\n", $1, d, e }
        END { printf "  %-16s %6.2f\n", "all", t }'
