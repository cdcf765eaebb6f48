#!/usr/bin/env bash
# Writes the baseline run `scenarios/quality-agreement.kdl` gates its answers against
# (docs/quality.md, "Agreement as an SLA"): the same workload as that scenario (its seed,
# target, data set and stage; no SLA, no baseline of its own) run against the embedded
# simulator, its results.json and answers.jsonl kept in scenarios/data/qa-baseline/.
# The simulator's answers depend only on the plan and its own seed, so running this again
# writes the same answers. Run it again when the questions (scripts/qa-set.sh), the
# simulator's answers or the scenario's workload change.
#
#   scripts/qa-baseline.sh [path/to/infermeter]
set -euo pipefail
cd "$(dirname "$0")/../scenarios"
bin="${1:-infermeter}"
out="data/qa-baseline"
rm -rf "$out"
# Keep this block's workload the same as quality-agreement.kdl's.
"$bin" run - --out "$out" --quiet --no-plots --no-hostname <<'KDL' || test $? -eq 1
scenario "quality-agreement" { seed 11; }
target "sim" {
    timeout "30s"
    ignore-eos #false
    decode-base "4ms"
    max-running 64
    answer-accuracy 0.95
}
dataset "qa" {
    jsonl "data/qa.jsonl" max-tokens=64
    quality { score "number"; }
}
stage "qa" {
    dataset "qa"
    arrival "concurrency" clients=8
    requests 120
}
KDL
find "$out" -type f ! -name results.json ! -name answers.jsonl -delete
