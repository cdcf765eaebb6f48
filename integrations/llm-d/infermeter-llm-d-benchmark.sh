#!/usr/bin/env bash
# infermeter as an llm-d-benchmark harness (see README.md beside this file).
#
# llm-d-benchmark runs `workload/harnesses/<harness>-llm-d-benchmark.sh` in its launcher pod
# with the experiment's settings in LLMDBENCH_* variables; this one runs the workload
# profile (an infermeter scenario) against the stack under test and leaves, in the
# experiment's results directory, infermeter's own run directory and one Benchmark Report
# v0.2.1 per stage under the names llm-d-benchmark's analysis collects.
set -uo pipefail

results="${LLMDBENCH_RUN_EXPERIMENT_RESULTS_DIR:?the experiment results directory}"
scenario="${LLMDBENCH_RUN_WORKSPACE_DIR:?the harness workspace}/profiles/infermeter/${LLMDBENCH_RUN_EXPERIMENT_HARNESS_WORKLOAD_NAME:?the workload profile}"
endpoint="${LLMDBENCH_HARNESS_STACK_ENDPOINT_URL:?the stack endpoint, an OpenAI-compatible base URL}"
model="${LLMDBENCH_DEPLOY_CURRENT_MODEL:-}"

run="$results/infermeter"
mkdir -p "$results"
args=(run "$scenario" --url "$endpoint" --out "$run" --progress-lines)
if [[ -n "$model" ]]; then
  args+=(--model "$model")
fi
infermeter "${args[@]}"
rc=$?

# 0 passed, 1 an SLA failed, 4 inconclusive: the run measured, so its reports are written.
# 2 (a usage error) and 3 (the run could not be carried out) leave no figures to report.
if [[ -f "$run/results.json" ]] && [[ $rc -eq 0 || $rc -eq 1 || $rc -eq 4 ]]; then
  infermeter report "$run/results.json" --format llm-d --out "$run/llm-d-report.jsonl" || rc=3
  # One report per stage, one a line: each its own file, JSON (which YAML readers read),
  # named as llm-d-benchmark's analysis collects reports.
  stage=0
  while IFS= read -r report; do
    printf '%s\n' "$report" > "$results/benchmark_report_v0.2,_infermeter_stage_${stage}.yaml"
    stage=$((stage + 1))
  done < "$run/llm-d-report.jsonl"
  echo "infermeter: ${stage} benchmark report(s) in $results"
fi
exit $rc
