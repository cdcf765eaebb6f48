#!/usr/bin/env bash
# Does the closed-loop shortfall rule catch a stalled client and leave a busy one decided?
# Runs a closed loop of 4 clients against the embedded simulator RUNS times with the client
# held LAG ms between reading an answer and sending its next request (the debug builds' test
# hook INFERMETER_TEST_SEND_LAG_MS), and RUNS times without, with the hypervisor's steal set
# to 5 % (INFERMETER_TEST_STEAL_PERCENT) in both; prints how often each run was flagged
# `idle_clients`, its median idle share, and each assertion's outcomes.
#   scripts/idle-clients.sh [RUNS] [LAG_MS]     (default 10 runs, 20 ms)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
lag=${2:-20}
cargo build --quiet
bin=${CARGO_TARGET_DIR:-target}/debug/infermeter
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/s.kdl" <<'KDL'
scenario "idle-clients" { seed 4; }
target "sim" { decode-base "2ms"; decode-per-seq "0ms"; prefill-per-token "10us"; }
dataset "d" { synthetic { input-tokens 64; output-tokens 4; } }
stage "s" { dataset "d"; arrival "concurrency" clients=4; requests 120; }
sla {
    assert "error_rate < 5%"
    assert "ttft.p50 < 30s"
}
KDL
for case in "stalled:$lag" "busy:0"; do
  name=${case%%:*}
  ms=${case##*:}
  for i in $(seq 1 "$runs"); do
    INFERMETER_TEST_SEND_LAG_MS=$ms INFERMETER_TEST_STEAL_PERCENT=5 \
      "$bin" run "$dir/s.kdl" --out "$dir/$name-$i" --quiet --no-plots \
      --untrusted inconclusive >/dev/null 2>&1 || true
  done
  python3 - "$dir" "$name" "$runs" <<'PY'
import json, statistics, sys
d, name, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
flagged, idle, outcomes = 0, [], {}
for i in range(1, runs + 1):
    r = json.load(open(f"{d}/{name}-{i}/results.json"))
    s = r["stages"][0]
    idle.append(s["client"].get("closed_loop_idle_percent", float("nan")))
    flagged += any(f["flag"] == "idle_clients" for f in s["validity"].get("flags", []))
    for v in r["sla"]:
        key = (v["expr"], v["outcome"], v.get("basis", {}).get("rule"))
        outcomes[key] = outcomes.get(key, 0) + 1
print(f"{name}: flagged idle_clients in {flagged}/{runs} runs, "
      f"idle share median {statistics.median(idle):.3f}% (min {min(idle):.3f}, max {max(idle):.3f})")
for (expr, outcome, rule), n in sorted(outcomes.items()):
    print(f"  {expr:<18} {outcome:<13} by {rule:<14} {n}/{runs}")
PY
done
