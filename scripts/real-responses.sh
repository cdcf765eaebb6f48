#!/usr/bin/env bash
# The Responses API against a real engine, by hand (not part of `cargo test`): vLLM's OpenAI
# server on CPU (recipe in ../shared/vllm-cpu) with its tiny random-weight model, measured by
# the client and by the server's own `/metrics` histograms, for `api "responses"` and, on the
# same server in alternation, `api "chat"`. Prints the figures; asserts nothing.
#
#   VLLMCPU=/path/to/vllm-cpu PORT=8101 ROUNDS=2 scripts/real-responses.sh
#
# VLLMCPU is an installed copy of ../shared/vllm-cpu (./install.sh and make_model.py done). A
# server already answering on PORT is used as it is (and left running); otherwise one is
# started here and stopped at the end. vLLM pins its worker to core 0, so the client runs on
# core 1 (`taskset -c 1`) when there are two cores or more.
#
# Per run (40 requests at 4 req/s, 128 prompt tokens, 32 output tokens, after a few requests
# of warm-up sent apart) the means of TTFT, E2E, ITL and TPOT: the client's (results.json) and
# the server's (the increase of each histogram's `_sum` over its `_count` across the run:
# vllm:time_to_first_token_seconds, vllm:e2e_request_latency_seconds,
# vllm:inter_token_latency_seconds, vllm:request_time_per_output_token_seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
VLLMCPU=${VLLMCPU:-../vllm-cpu}
PORT=${PORT:-8101}
ROUNDS=${ROUNDS:-2}
BIN=target/release/infermeter
[ -x "$BIN" ] || cargo build --release --quiet
PIN=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then PIN=(taskset -c 1); fi
WORK=$(mktemp -d)
SERVER=""
cleanup() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
URL="http://127.0.0.1:$PORT"
if ! curl -sf "$URL/v1/models" >/dev/null 2>&1; then
    SERVER=$(cd "$VLLMCPU" && PORT=$PORT EXTRA_ARGS="--enforce-eager" ./start.sh)
fi
TOK="$(cd "$VLLMCPU" && pwd)/tiny-llama-hf/tokenizer.json"

# The histograms' sums and counts, one `name_sum value` / `name_count value` a line.
scrape() {
    curl -sf "$URL/metrics" | grep -E '^vllm:(time_to_first_token|e2e_request_latency|inter_token_latency|request_time_per_output_token)_seconds_(sum|count)' |
        awk '{ split($1, a, "{"); s[a[1]] += $2 } END { for (k in s) print k, s[k] }' | sort
}

# Mean of histogram $1 (ms) between the scrapes $2 and $3.
server_mean() {
    local sum count
    sum=$(join <(grep "^vllm:$1_seconds_sum " "$2") <(grep "^vllm:$1_seconds_sum " "$3") | awk '{ print $3 - $2 }')
    count=$(join <(grep "^vllm:$1_seconds_count " "$2") <(grep "^vllm:$1_seconds_count " "$3") | awk '{ print $3 - $2 }')
    awk -v s="$sum" -v c="$count" 'BEGIN { if (c > 0) printf "%.2f", 1000 * s / c; else print "-" }'
}

run_api() { # $1 = api, $2 = run name
    local api=$1 name=$2
    cat >"$WORK/$name.kdl" <<EOF
scenario "$name" { seed 27; }
target "$URL/v1" { model "tiny-llama"; api "$api"; timeout "120s"; cache-salt #true; }
tokenizer "$TOK"
dataset "d" { synthetic { input-tokens 128; output-tokens 32; } }
stage "s" { dataset "d"; arrival "constant" rate=4; requests 40; }
EOF
    # A few requests first, outside the measured window: the first requests of a fresh server
    # compile and allocate.
    sed 's/rate=4; requests 40;/rate=2; requests 4;/' "$WORK/$name.kdl" >"$WORK/$name-warm.kdl"
    "${PIN[@]}" "$BIN" run "$WORK/$name-warm.kdl" --out "$WORK/$name-warm" --no-plots \
        --untrusted judge >/dev/null 2>&1 || true
    scrape >"$WORK/$name.before"
    "${PIN[@]}" "$BIN" run "$WORK/$name.kdl" --out "$WORK/$name" --no-plots --requests-jsonl \
        --untrusted judge >"$WORK/$name.out" 2>&1 || echo "    (exit $?)"
    scrape >"$WORK/$name.after"
    local r="$WORK/$name/results.json"
    local s='.stages[0]'
    echo "-- $api ($name): ok $(jq -r "$s.requests.ok" "$r") of $(jq -r "$s.requests.sent" "$r"), output $(jq -r "$s.tokens.output" "$r") tokens (from_usage $(jq -r "$s.tokens.from_usage" "$r")), reasoning $(jq -r "$s.tokens.reasoning // 0" "$r"), trusted $(jq -r "$s.validity.trusted" "$r")"
    printf '    %-6s %10s %10s %8s\n' metric client vLLM "diff"
    for pair in ttft:time_to_first_token e2e:e2e_request_latency itl:inter_token_latency tpot:request_time_per_output_token; do
        local ours=${pair%%:*} theirs=${pair#*:} c v
        c=$(jq -r "$s.latency.${ours}_ms.mean" "$r")
        v=$(server_mean "$theirs" "$WORK/$name.before" "$WORK/$name.after")
        printf '    %-6s %8.2f ms %8s ms %+7.2f\n' "$ours" "$c" "$v" "$(awk -v c="$c" -v v="$v" 'BEGIN { print (v == "-") ? 0 : c - v }')"
    done
    echo "    TTFA p50 $(jq -r "$s.latency.ttfa_ms.p50" "$r") ms (TTFT p50 $(jq -r "$s.latency.ttft_ms.p50" "$r")), finish reasons: $(jq -r '.finish_reason' "$WORK/$name/requests.jsonl" | sort | uniq -c | tr -s ' \n' ' ')"
    jq -r "$s.validity.reasons[]? | \"      ! \" + ." "$r"
}

echo "== vLLM $(curl -sf "$URL/version" || echo '?') at $URL; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 "$ROUNDS"); do
    run_api responses "responses-$i"
    run_api chat "chat-$i"
done
echo "== load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
