#!/usr/bin/env bash
# The coordinator's resident memory under oversized uploads (docs/distributed.md, "What the
# coordinator refuses"): starts `coordinate` for scenarios/distributed.kdl with 3 shards, then
# streams three 200 MiB bodies to /v1/results at once without the token, then has three shards
# join and stream 200 MiB each with it, printing the coordinator's VmRSS and VmHWM (peak) from
# /proc after each. Memory figures: quote them with the build (debug or release).
#
#   scripts/coordinator-rss.sh [BINARY]   (default: target/release/infermeter)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/infermeter}
[ -x "$BIN" ] || { echo "build first: cargo build --release" >&2; exit 1; }
DIR=$(mktemp -d)
trap 'kill -INT $CO 2>/dev/null || true; rm -rf "$DIR"' EXIT
"$BIN" coordinate scenarios/distributed.kdl --shards 3 --listen 127.0.0.1:0 \
    --token-file "$DIR/token" --out "$DIR/merged" --wait 30s 2>"$DIR/co.err" &
CO=$!
for _ in $(seq 100); do grep -q '^coordinating' "$DIR/co.err" 2>/dev/null && break; sleep 0.1; done
ADDR=$(sed -n 's/^coordinating .* on //p' "$DIR/co.err" | head -1)
TOKEN=$(cat "$DIR/token")
read -r HASH STEP0 < <("$BIN" plan scenarios/distributed.kdl --format json | python3 -c '
import json, sys
p = json.load(sys.stdin)["plan"]
print(p["hash"], (p.get("warmup") or p["stages"][0])["name"])')
rss() { awk '/VmRSS|VmHWM/ { printf "%s %s %s  ", $1, $2, $3 }' "/proc/$CO/status"; echo; }
post() {  # $1: shard, $2: auth header or empty
    head -c 200M /dev/zero | curl -s -o /dev/null -w "shard $1: %{http_code}\n" -X POST -T - \
        -H 'content-type: application/json' ${2:+-H "$2"} \
        "http://$ADDR/v1/results?shard=$1&instance=a$1" || true
}
# Waits for the jobs started since the coordinator (not for the coordinator).
wait_posts() { for p in "$@"; do wait "$p" || true; done; }
echo "idle:                                 $(rss)"
pids=(); for i in 0 1 2; do post "$i" "" & pids+=($!); done; wait_posts "${pids[@]}"
echo "three 200 MiB posts without the token: $(rss)"
pids=()
for i in 0 1 2; do
    curl -s -o /dev/null -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \
        -d "{\"shard\":$i,\"count\":3,\"instance\":\"a$i\",\"step\":0,\"stage\":\"$STEP0\",\"plan_hash\":\"$HASH\"}" \
        "http://$ADDR/v1/barrier" &
    pids+=($!)
done
wait_posts "${pids[@]}"
pids=(); for i in 0 1 2; do post "$i" "authorization: Bearer $TOKEN" & pids+=($!); done
wait_posts "${pids[@]}"
echo "three 200 MiB posts by joined shards:  $(rss)"
grep -c 'refused POST /v1/results' "$DIR/co.err" | sed 's/^/refusals logged: /'
