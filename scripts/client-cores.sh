#!/usr/bin/env bash
# How the client's CPU time spreads over cores with `--cpus`: runs the bench scenario at RATE
# req/s for 10 s against a zero-latency simulator in its own process, once per `--cpus`
# value given, and prints each client thread's CPU time (user + system, from
# /proc/PID/task/*/stat, read 9 s into it) with the CPU it last ran on, and
# the process's total. Timing figures: quote them with the machine's load and steal.
#
#   scripts/client-cores.sh [BINARY] [RATE] [CPUS…]   (default: target/release/infermeter 3000 1 2)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/infermeter}
RATE=${2:-3000}
shift $(( $# > 2 ? 2 : $# ))
SETS=("${@:-1 2}")
[ "$#" -eq 0 ] && SETS=(1 2)
[ -x "$BIN" ] || { echo "build first: cargo build --release" >&2; exit 1; }
DIR=$(mktemp -d)
trap 'kill -INT $SIM 2>/dev/null || true; rm -rf "$DIR"' EXIT
"$BIN" sim --listen 127.0.0.1:0 --prefill-per-token 0ms --decode-base 0ms --decode-per-seq 0ms \
    --max-running 4096 --kv-capacity 100000000 >"$DIR/sim.out" 2>/dev/null &
SIM=$!
for _ in $(seq 50); do grep -q http "$DIR/sim.out" 2>/dev/null && break; sleep 0.1; done
URL=$(grep -o 'http://[^ ]*' "$DIR/sim.out" | head -1)
TICK=$(getconf CLK_TCK)
for cpus in "${SETS[@]}"; do
    echo "--cpus $cpus, $RATE req/s for 10 s (load average $(cut -d' ' -f1-3 /proc/loadavg)):"
    "$BIN" run scenarios/bench/open-loop.kdl --param "url=$URL" --param "rate=$RATE" \
        --param duration=10s --quiet --no-plots --cpus "$cpus" --out "$DIR/out.$cpus" \
        >/dev/null 2>&1 &
    PID=$!
    sleep 9
    for t in "/proc/$PID/task/"*; do
        # comm may hold spaces; the fields after its closing parenthesis are fixed.
        name=$(cat "$t/comm" 2>/dev/null) || continue
        rest=$(sed 's/^.*) //' "$t/stat" 2>/dev/null) || continue
        read -r -a f <<<"$rest"
        # utime, stime: fields 14 and 15 of stat (12 and 13 after the name); processor: 39 (37).
        ms=$(( (f[11] + f[12]) * 1000 / TICK ))
        [ "$ms" -ge 50 ] && printf "   %-18s %6d ms CPU, last on CPU %s\n" "$name" "$ms" "${f[36]}"
    done
    wait $PID || true
    grep -o '"cpu_percent": *[0-9.]*' "$DIR/out.$cpus/results.json" | head -1 | sed 's/^/   /'
    python3 - "$DIR/out.$cpus/results.json" <<'PY' 2>/dev/null || true
import json, sys
s = json.load(open(sys.argv[1]))["stages"][0]
c = s["client"]
print(f"   sent {s['requests']['sent']}, send lag p99 {c['send_lag_ms']['p99']:.3f} ms, steal {c.get('steal_percent', 0):.1f} %")
PY
done
