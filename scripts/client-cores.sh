#!/usr/bin/env bash
# How the client's CPU time spreads over cores with `--cpus`: runs the bench scenario at RATE
# req/s for 10 s against a zero-latency simulator in its own process, once per `--cpus`
# value given, and prints each client thread's CPU time (user + system, from
# /proc/PID/task/*/stat, read 9 s into it) with the CPU it last ran on, and
# the process's total: its CPU time per request, and its send lag. With `--cpus N` (N > 1)
# the threads named im-shard-K are the shards, each sending on its own CPU.
# Timing figures: quote them with the machine's load and steal.
#
#   scripts/client-cores.sh [BINARY] [RATE] [CPUS…]   (default: target/release/infermeter 3000 1 2)
#   SIM_CPUS=LIST scripts/client-cores.sh …  (the simulator pinned to those CPUs, `taskset -c`)
#   NETNS=1 scripts/client-cores.sh …        (the simulator in a network namespace of its own,
#       reached over a veth pair, as a server on another host is reached over a NIC; root)
#   QUOTA=0.1 scripts/client-cores.sh BIN 12000 1 2   (the client in a CPU cgroup allowed
#       QUOTA of a core per CPU it is given, a 10 ms period; root): equal CPU slices per
#       shard, so on a machine whose other cores the server needs, offered more than the
#       client can send, the completed req/s shows how sending grows with --cpus
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/infermeter}
RATE=${2:-3000}
shift $(( $# > 2 ? 2 : $# ))
SETS=("${@:-1 2}")
[ "$#" -eq 0 ] && SETS=(1 2)
[ -x "$BIN" ] || { echo "build first: cargo build --release" >&2; exit 1; }
DIR=$(mktemp -d)
NS=imcores$$
cleanup() {
    kill -INT "$SIM" 2>/dev/null || true
    if [ -n "${NETNS:-}" ]; then
        sleep 0.5
        ip netns del "$NS" 2>/dev/null || true
        ip link del "${NS}a" 2>/dev/null || true
    fi
    [ -n "${CG:-}" ] && rmdir "$CG" 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT
LISTEN=127.0.0.1:0
WRAP=()
if [ -n "${NETNS:-}" ]; then
    ip netns add "$NS"
    ip link add "${NS}a" type veth peer name "${NS}b" netns "$NS"
    ip addr add 10.231.0.1/30 dev "${NS}a"
    ip link set "${NS}a" up
    ip -n "$NS" addr add 10.231.0.2/30 dev "${NS}b"
    ip -n "$NS" link set "${NS}b" up
    ip -n "$NS" link set lo up
    LISTEN=10.231.0.2:0
    WRAP=(ip netns exec "$NS")
fi
[ -n "${SIM_CPUS:-}" ] && WRAP+=(taskset -c "$SIM_CPUS")
"${WRAP[@]}" "$BIN" sim --listen "$LISTEN" --prefill-per-token 0ms --decode-base 0ms \
    --decode-per-seq 0ms --max-running 4096 --kv-capacity 100000000 >"$DIR/sim.out" 2>/dev/null &
SIM=$!
for _ in $(seq 50); do grep -q http "$DIR/sim.out" 2>/dev/null && break; sleep 0.1; done
URL=$(grep -o 'http://[^ ]*' "$DIR/sim.out" | head -1)
TICK=$(getconf CLK_TCK)
CG=
if [ -n "${QUOTA:-}" ]; then
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        CG=/sys/fs/cgroup/imcores$$
        echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
    else
        CG=/sys/fs/cgroup/cpu/imcores$$
    fi
    mkdir "$CG"
fi
quota() { # --cpus value -> the cgroup's quota: QUOTA of a core per CPU, per 10 ms
    local n us
    n=$(python3 -c 'import sys; print(sum(int(b) - int(a) + 1 if "-" in p else 1 for p in sys.argv[1].split(",") for a, b in [p.split("-") if "-" in p else (0, 0)]) if not sys.argv[1].isdigit() else int(sys.argv[1]))' "$1")
    us=$(awk -v f="$QUOTA" -v n="$n" 'BEGIN { printf "%d", f * n * 10000 }')
    if [ -f "$CG/cpu.max" ]; then
        echo "$us 10000" >"$CG/cpu.max"
    else
        echo 10000 >"$CG/cpu.cfs_period_us"
        echo "$us" >"$CG/cpu.cfs_quota_us"
    fi
    echo "   in a cgroup allowed $us µs of CPU per 10 ms ($n CPU × $QUOTA)"
}
for cpus in "${SETS[@]}"; do
    echo "--cpus $cpus, $RATE req/s for 10 s (load average $(cut -d' ' -f1-3 /proc/loadavg)):"
    LAUNCH=()
    if [ -n "$CG" ]; then
        quota "$cpus"
        # shellcheck disable=SC2016 # $$ is the inner shell's, which then becomes the client
        LAUNCH=(bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG")
    fi
    "${LAUNCH[@]}" "$BIN" run scenarios/bench/open-loop.kdl --param "url=$URL" --param "rate=$RATE" \
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
rps = s["throughput"]["requests_per_s"]
per = c["cpu_percent"] / 100 * 1e6 / rps if rps else 0
done = s["requests"]["ok"] / s["wall_time_s"] if s["wall_time_s"] else 0
print(f"   sent {s['requests']['sent']}, {rps:.0f} req/s ({done:.0f} completed per second of the stage's wall time), send lag p50 {c['send_lag_ms']['p50']:.3f} / p99 {c['send_lag_ms']['p99']:.3f} ms, "
      f"CPU {per:.0f} µs per request, steal {c.get('steal_percent', 0):.1f} %")
PY
done
