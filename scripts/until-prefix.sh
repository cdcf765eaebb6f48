#!/usr/bin/env bash
# What the complete-prefix look saves a real `until-decided` stage (docs/statistics.md, "The
# complete prefix"): runs scenarios/bench/until-prefix.kdl against the in-process simulator
# RUNS times (run k with seed k) and prints, per stage and run, the requests it sent,
# why it stopped, which look decided it, the prefix's length at the stop and the verdict.
#
#   scripts/until-prefix.sh                    3 runs with target/debug/infermeter
#   BIN=path/to/infermeter RUNS=5 scripts/until-prefix.sh
#
# Give BIN a build without the prefix look to compare with the in-flight look alone. Prints
# figures; asserts nothing (the requests a stage needs depend on how busy the machine is).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/debug/infermeter}
RUNS=${RUNS:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "binary: $BIN; load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
printf '%-7s %4s %6s %-12s %-10s %6s %s\n' stage run sent stopped decided_by prefix verdict
for run in $(seq 1 "$RUNS"); do
    out="$WORK/$run"
    sed "s/^    seed 5$/    seed $run/" scenarios/bench/until-prefix.kdl >"$WORK/s$run.kdl"
    "$BIN" run "$WORK/s$run.kdl" --out "$out" --quiet --untrusted judge >/dev/null 2>&1 || true
    jq -r --arg run "$run" '
        . as $r | .stages[] | . as $s |
        [ $s.name, $run, ($s.requests.sent | tostring),
          $s.until_decided.stopped, ($s.until_decided.decided_by // "-"),
          (($s.until_decided.prefix.requests // "-") | tostring),
          ([$r.sla[] | select(.stage == $s.name) |
            .outcome + (if .basis.rule == "prefix" then " (prefix)" else "" end)] | join(","))
        ] | @tsv' "$out/results.json" |
        while IFS=$'\t' read -r name r sent stopped by m verdict; do
            printf '%-7s %4s %6s %-12s %-10s %6s %s\n' "$name" "$r" "$sent" "$stopped" "$by" "$m" "$verdict"
        done
done
