#!/usr/bin/env bash
# System calls the client makes per request, counted by `strace -c -f`: like
# client-instructions.sh, two runs (5 s and 15 s at RATE req/s, default 200, against a
# zero-latency simulator) and the difference per request, so start-up cancels. strace slows
# the client, which changes how many events each read finds, so the counts are upper bounds
# for the same load without it. Then the same two runs without strace under /usr/bin/time:
# the client's user and system CPU time per request (the difference again).
#
#   [RATE=3000] [CPUS=1] scripts/client-syscalls.sh [BINARY]  (default: target/release/infermeter)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/infermeter}
RATE=${RATE:-200}
CPUS=${CPUS:-}
command -v strace >/dev/null || { echo "strace is not installed (apt-get install strace)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "build first: cargo build --release" >&2; exit 1; }
DIR=$(mktemp -d)
trap 'kill -INT $SIM 2>/dev/null || true; rm -rf "$DIR"' EXIT
"$BIN" sim --listen 127.0.0.1:0 --prefill-per-token 0ms --decode-base 0ms --decode-per-seq 0ms \
    --max-running 4096 --kv-capacity 100000000 >"$DIR/sim.out" 2>/dev/null &
SIM=$!
for _ in $(seq 50); do grep -q http "$DIR/sim.out" 2>/dev/null && break; sleep 0.1; done
URL=$(grep -o 'http://[^ ]*' "$DIR/sim.out" | head -1)
client() { # seconds, a name for the run, then the command to run the client under
    local s=$1 name=$2; shift 2
    "$@" "$BIN" run scenarios/bench/open-loop.kdl --param "url=$URL" --param "rate=$RATE" \
        --param "duration=${s}s" ${CPUS:+--cpus "$CPUS"} --quiet --no-plots \
        --out "$DIR/out.$name" >/dev/null 2>&1 || true
    grep -o '"sent": *[0-9]*' "$DIR/out.$name/results.json" | head -1 | grep -o '[0-9]*$'
}
count() { client "$1" "st$1" strace -c -f -o "$DIR/st.$1"; } # seconds -> requests
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

# A non-zero exit (a failed SLA) puts a line before the times: the last line is read.
timed() { client "$1" "time$1" /usr/bin/time -o "$DIR/time.$1" -f '%U %S'; } # seconds -> requests
t1=$(timed 5)
t2=$(timed 15)
read -r u1 s1 < <(tail -1 "$DIR/time.5")
read -r u2 s2 < <(tail -1 "$DIR/time.15")
awk -v n="$(( t2 - t1 ))" -v u1="$u1" -v u2="$u2" -v s1="$s1" -v s2="$s2" \
    'BEGIN { u = u2 - u1; s = s2 - s1; printf "CPU per request without strace (/usr/bin/time, 15 s run minus 5 s run, %d requests):\n  user   %6.1f us\n  system %6.1f us (%.0f %% of the client'"'"'s CPU)\n", n, u / n * 1e6, s / n * 1e6, 100 * s / (u + s) }'
