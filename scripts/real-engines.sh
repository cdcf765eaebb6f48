#!/usr/bin/env bash
# The checks of issue 19 against two real engines, repeated by hand (not part of `cargo test`):
# llama.cpp's llama-server and vLLM's OpenAI server, both on CPU with tiny random-weight
# models (recipes in ../shared/realserver and ../shared/vllm-cpu). Prints the figures of each
# item; asserts nothing.
#
#   REALSERVER=/path/to/realserver VLLMCPU=/path/to/vllm-cpu scripts/real-engines.sh [llama|vllm|endless|all]
#
# REALSERVER is a built copy of ../shared/realserver (./build.sh done), VLLMCPU an installed copy
# of ../shared/vllm-cpu (./install.sh and make_model.py done). The servers are started and
# stopped here (llama-server on 8082, vLLM on 8090). vLLM pins its worker to core 0, so the
# client runs on core 1 (`taskset -c 1`) when there are two cores or more.
set -euo pipefail
cd "$(dirname "$0")/.."
ENGINES=${1:-all}
REALSERVER=${REALSERVER:-../realserver}
VLLMCPU=${VLLMCPU:-../vllm-cpu}
BIN=target/release/infermeter
[ -x "$BIN" ] || cargo build --release --quiet
PIN=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then PIN=(taskset -c 1); fi
WORK=$(mktemp -d)
SERVER=""
PROXY=""
cleanup() {
    [ -n "$PROXY" ] && kill "$PROXY" 2>/dev/null || true
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

run() { # $1 = scenario text, $2 = out dir name, rest = extra arguments
    local text=$1 name=$2
    shift 2
    printf '%s\n' "$text" >"$WORK/$name.kdl"
    "${PIN[@]}" "$BIN" run "$WORK/$name.kdl" --out "$WORK/$name" --no-plots --requests-jsonl \
        --untrusted judge "$@" >"$WORK/$name.out" 2>&1 || echo "    (exit $?)"
}
jqs() { jq -r "$1" "$WORK/$2/results.json"; }

# A pass-through proxy on $1 to $2 that deletes `usage` (and with $3 = timings, `timings`) from
# every SSE chunk: a server that sends no usage.
strip_proxy() {
    python3 - "$1" "$2" "${3:-}" <<'PY' &
import http.client, json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port, up, drop = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def log_message(self, *a): pass
    def fwd(self, method):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        c = http.client.HTTPConnection("127.0.0.1", up, timeout=120)
        c.request(method, self.path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        self.send_response(r.status)
        self.send_header("Content-Type", r.getheader("Content-Type", "application/json"))
        self.send_header("Connection", "close")
        self.end_headers()
        while True:
            line = r.readline()
            if not line: break
            if line.startswith(b"data: {"):
                j = json.loads(line[6:]); j.pop("usage", None)
                if drop == "timings": j.pop("timings", None)
                line = b"data: " + json.dumps(j).encode() + b"\n"
            self.wfile.write(line); self.wfile.flush()
        c.close()
    def do_GET(self): self.fwd("GET")
    def do_POST(self): self.fwd("POST")
ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY
    PROXY=$!
    sleep 1
}

# One engine's checks: $1 = name, $2 = base URL, $3 = root URL, $4 = tokenizer path.
checks() {
    local name=$1 url=$2 root=$3 tok=$4
    local target="target \"$url\" { model \"tiny-llama\"; api \"completions\"; timeout \"120s\"; }"
    local ds='dataset "d" { synthetic { input-tokens 128; output-tokens 32; } }'
    echo "== $name ($url)"

    echo "-- 1. connections the server closes: 40 requests, 4 clients"
    run "scenario \"conn\" { seed 1; }
$target
tokenizer \"$tok\"
$ds
stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=4; requests 40; }" conn
    echo "    errors $(jqs '.stages[0].requests.errors' conn | tr -d '\n ') retried $(jqs '.stages[0].requests.retried // 0' conn) ok $(jqs '.stages[0].requests.ok' conn)"

    echo "-- 2. prompt cache: the same plan twice, then salted twice, then with reset-cache"
    local cache="scenario \"cache\" { seed 2; }
TARGET
tokenizer \"$tok\"
dataset \"d\" { synthetic { input-tokens 384; output-tokens 8; } }
stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 20; }"
    for variant in plain:"" salt:"cache-salt #true" reset:"reset-cache \"auto\""; do
        local v=${variant%%:*} extra=${variant#*:}
        local t="target \"$url\" { model \"tiny-llama\"; api \"completions\"; timeout \"120s\"; $extra }"
        for i in 1 2; do
            run "${cache/TARGET/$t}" "cache-$v-$i"
            echo "    $v run $i: cached $(jqs '.stages[0].tokens.cached // 0' "cache-$v-$i") of $(jqs '.stages[0].tokens.input' "cache-$v-$i") prompt tokens, TTFT p50 $(jqs '.stages[0].latency.ttft_ms.p50' "cache-$v-$i") ms, trusted $(jqs '.stages[0].validity.trusted' "cache-$v-$i"), plan $(jqs '.plan_hash' "cache-$v-$i")"
            jqs '.stages[0].validity.reasons[] | select(test("cache")) | "      ! " + .' "cache-$v-$i"
            jqs '.stages[0].notes[]? | "      note: " + .' "cache-$v-$i"
        done
    done
    printf '{"prompt": "a"}\n{"prompt": "b"}\n{"prompt": "c"}\n{"prompt": "d"}\n' >"$WORK/four.jsonl"
    run "scenario \"cycle\" { seed 2; }
$target
tokenizer \"$tok\"
dataset \"d\" { jsonl \"four.jsonl\" max-tokens=8; }
stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 20; }" cycle
    jqs '.stages[0].notes[]? | "    note: " + .' cycle

    echo "-- 3. JSONL messages on the completions API"
    printf '{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}\n' >"$WORK/msgs.jsonl"
    printf 'scenario "msgs"\n%s\ndataset "d" { jsonl "msgs.jsonl"; }\nstage "s" { dataset "d"; arrival "concurrency" clients=1; requests 2; }\n' "$target" >"$WORK/msgs.kdl"
    "$BIN" plan "$WORK/msgs.kdl" 2>&1 | sed 's/^/    /' | head -3 || true

    echo "-- 4. counting without usage (a proxy removes it)"
    local port=${url##*:}
    port=${port%%/*}
    strip_proxy 8099 "$port"
    for drop in usage timings; do
        [ "$drop" = timings ] && { kill "$PROXY"; strip_proxy 8099 "$port" timings; }
        run "scenario \"nousage\" { seed 3; }
target \"http://127.0.0.1:8099/v1\" { model \"tiny-llama\"; api \"completions\"; timeout \"120s\"; }
tokenizer \"$tok\"
$ds
stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 10; }" "nousage-$drop"
        echo "    without $drop: output $(jqs '.stages[0].tokens.output' "nousage-$drop") tokens for 10 x 32 planned; from_timings $(jqs '.stages[0].tokens.from_timings // 0' "nousage-$drop") from_tokenize $(jqs '.stages[0].tokens.from_tokenize // 0' "nousage-$drop") from_tokenizer $(jqs '.stages[0].tokens.from_tokenizer' "nousage-$drop") estimated $(jqs '.stages[0].tokens.estimated // 0' "nousage-$drop")"
    done
    kill "$PROXY" 2>/dev/null || true
    PROXY=""

    echo "-- 5. every request fails (prompts longer than the context)"
    run "scenario \"overflow\" { seed 4; }
$target
tokenizer \"$tok\"
dataset \"d\" { synthetic { input-tokens 4000; output-tokens 8; } }
stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=2; requests 10; }" overflow
    echo "    outcome $(jqs '.outcome' overflow), passed $(jqs '.passed' overflow), trusted $(jqs '.stages[0].validity.trusted' overflow), errors $(jqs '.stages[0].requests.errors' overflow | tr -d '\n ')"

    echo "-- 6. abort-on-fail while the stage runs (planned 2 req/s for 60 s)"
    local t0=$SECONDS
    run "scenario \"abort\" { seed 4; }
$target
tokenizer \"$tok\"
dataset \"d\" { synthetic { input-tokens 4000; output-tokens 8; } }
stage \"s\" { dataset \"d\"; arrival \"constant\" rate=2; duration \"60s\"; }
sla { assert \"error_rate < 5%\" abort-on-fail=#true; abort-min-samples 5; }" abort
    echo "    ran $((SECONDS - t0)) s, sent $(jqs '.stages[0].requests.sent' abort): $(jqs '.stages[0].aborted' abort)"

    echo "-- 7. send lag against TTFT: 1 req/s"
    run "scenario \"lag\" { seed 5; }
$target
tokenizer \"$tok\"
$ds
stage \"s\" { dataset \"d\"; arrival \"constant\" rate=1; requests 10; }" lag
    echo "    lag p99 $(jqs '.stages[0].client.send_lag_ms.p99' lag) ms, TTFT p50 $(jqs '.stages[0].latency.ttft_ms.p50' lag) ms, trusted $(jqs '.stages[0].validity.trusted' lag)"
    jqs '.stages[0].validity.reasons[]? | "      ! " + .' lag

    echo "-- 8. kv_cache.max, a baseline without the stage, requests.jsonl"
    run "scenario \"small\" { seed 6; }
$target
tokenizer \"$tok\"
$ds
telemetry { interval \"500ms\"; prometheus \"$root/metrics\"; }
stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=2; requests 10; }
sla { assert \"kv_cache.max < 90%\"; }" kv
    jqs '.sla[] | "    " + .expr + ": " + .outcome + " (" + (.note // "") + ")"' kv
    printf 'scenario "base"\n%s\ntokenizer "%s"\n%s\nreport { baseline "kv/results.json"; }\nstage "other" { dataset "d"; arrival "concurrency" clients=1; requests 4; }\nsla { assert "ttft.p95 < baseline * 1.1"; }\n' "$target" "$tok" "$ds" >"$WORK/base.kdl"
    "${PIN[@]}" "$BIN" run "$WORK/base.kdl" --out "$WORK/base" --no-plots >"$WORK/base.out" 2>&1 || true
    grep -A1 "baseline \*" "$WORK/base.out" | sed 's/^ */    /' | head -2
    head -1 "$WORK/kv/requests.jsonl" | jq -c '{planned_input_tokens, input_tokens, planned_output_tokens, output_tokens, cached_tokens, finish_reason, server_timings, retries}' | sed 's/^/    /'

    echo "-- 9 and attribution: 40 requests, 4 clients, server telemetry"
    run "scenario \"attr\" { seed 8; }
$target
tokenizer \"$tok\"
dataset \"d\" { synthetic { input-tokens 256; output-tokens 32; } }
telemetry { interval \"500ms\"; prometheus \"$root/metrics\"; }
warmup requests=4
stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=4; requests 40; }" attr
    grep -E "TTFT mean|^s  " "$WORK/attr.out" | sed 's/^/    /'
    sed -n '/where the time went/,/^<sub>/p' "$WORK/attr/report.md" | sed 's/^/    /'
    echo "    chunks vs tokens: $(jq -s '[.[] | select(.stage=="s") | .chunks] | add' "$WORK/attr/requests.jsonl") chunks for $(jqs '.stages[0].tokens.output' attr) output tokens"
}

# Item 14c, no engine needed: one SSE line that never ends (64 KiB writes, forever) against a
# 1 MiB cap fails each request as `malformed` and keeps the client's memory bounded.
endless() {
    python3 - <<'PY' &
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8098)); s.listen(16)
def serve(c):
    try:
        data = b""
        while b"\r\n\r\n" not in data: data += c.recv(4096)
        if data.startswith(b"GET"):
            body = b'{"data":[{"id":"m"}]}'
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
            c.close(); return
        c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: ")
        while True: c.sendall(b"x" * 65536)
    except OSError: pass
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
    PROXY=$!
    sleep 1
    run 'scenario "endless" { seed 1; }
target "http://127.0.0.1:8098/v1" { model "m"; timeout "30s"; }
dataset "d" { synthetic { input-tokens 16; output-tokens 8; } }
stage "s" { dataset "d"; arrival "concurrency" clients=4; requests 40; }' endless
    echo "== an endless SSE line: errors $(jqs '.stages[0].requests.errors' endless | tr -d '\n ') in $(jqs '.stages[0].wall_time_s' endless) s, client peak RSS $(jqs '.stages[0].client.peak_rss_mb' endless) MiB"
    kill "$PROXY" 2>/dev/null || true
    PROXY=""
}
[[ "$ENGINES" == all || "$ENGINES" == endless ]] && endless

# A server already answering on its port is used as it is (and left running).
up() { curl -sf "http://127.0.0.1:$1/v1/models" >/dev/null 2>&1; }
if [[ "$ENGINES" == all || "$ENGINES" == llama ]]; then
    # --slot-save-path: llama-server refuses slot actions (the erase of reset-cache) without it.
    mkdir -p "$WORK/slots"
    up 8082 || SERVER=$(cd "$REALSERVER" && EXTRA_ARGS="--slot-save-path $WORK/slots" ./start.sh)
    checks "llama.cpp llama-server" "http://127.0.0.1:8082/v1" "http://127.0.0.1:8082" \
        "$(cd "$REALSERVER" && pwd)/tokenizer.json"
    [ -n "$SERVER" ] && kill "$SERVER"
    SERVER=""
    sleep 2
fi
if [[ "$ENGINES" == all || "$ENGINES" == vllm ]]; then
    up 8090 || SERVER=$(cd "$VLLMCPU" && EXTRA_ARGS="--enforce-eager" ./start.sh)
    checks "vLLM" "http://127.0.0.1:8090/v1" "http://127.0.0.1:8090" \
        "$(cd "$VLLMCPU" && pwd)/tiny-llama-hf/tokenizer.json"
    [ -n "$SERVER" ] && kill "$SERVER"
    SERVER=""
fi
