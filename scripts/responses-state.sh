#!/usr/bin/env bash
# Multi-turn Responses sessions both ways a conversation can travel, measured turn by turn
# (not part of `cargo test`; asserts nothing): resent whole every turn (`session
# state="resend"`) and kept by the server (`state="previous-response-id"`: every turn stored,
# each later turn sending only its new message and `previous_response_id`). Prints, per turn
# and mode, the request body's mean size, the prompt tokens the request carried and those the
# server says it processed, TTFT p50 and the prefix cache's share of the prompt.
#
#   scripts/responses-state.sh                       # the embedded simulator (prefix cache on)
#   URL=http://127.0.0.1:8090/v1 MODEL=tiny-llama TOKENIZER=path/tokenizer.json \
#       scripts/responses-state.sh                   # a real server, e.g. vLLM on CPU
#
# vLLM keeps responses only when started with VLLM_ENABLE_RESPONSES_API_STORE=1 (see
# ../shared/vllm-cpu). SESSIONS (8), TURNS (6), INPUT (128 tokens per user message), OUTPUT
# (32 tokens per answer) and CLIENTS (4) size the run; BIN names the binary (default
# target/debug/infermeter, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/debug/infermeter}
[ -x "$BIN" ] || cargo build --quiet
SESSIONS=${SESSIONS:-8}
TURNS=${TURNS:-6}
INPUT=${INPUT:-128}
OUTPUT=${OUTPUT:-32}
CLIENTS=${CLIENTS:-4}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

if [ -n "${URL:-}" ]; then
    target="target \"$URL\" { model \"${MODEL:-tiny-llama}\"; api \"responses\"; timeout \"120s\"; cache-salt #true; }"
    [ -n "${TOKENIZER:-}" ] && target="$target
tokenizer \"$TOKENIZER\""
else
    target="target \"sim\" {
    api \"responses\"; timeout \"30s\"; decode-base \"2ms\"; prefill-per-token \"50us\"
    output-len-dist \"fixed\"; output-len-mean $OUTPUT; prefix-cache #true
}"
fi

for state in resend previous-response-id; do
    cat >"$WORK/$state.kdl" <<EOF
scenario "$state" { seed 27; }
$target
dataset "d" {
    synthetic { input-tokens $INPUT; output-tokens $OUTPUT; }
    session turns=$TURNS state="$state"
}
stage "s" { dataset "d"; arrival "concurrency" clients=$CLIENTS; requests $SESSIONS; }
EOF
    "$BIN" run "$WORK/$state.kdl" --out "$WORK/$state" --no-plots --untrusted judge \
        >"$WORK/$state.out" 2>&1 || echo "($state: exit $?, see below)"
done

r() { jq -r "$2" "$WORK/$1/results.json"; }
for state in resend previous-response-id; do
    echo "-- $state: ok $(r "$state" '.stages[0].requests.ok') of $(r "$state" '.stages[0].requests.sent'), errors $(r "$state" '.stages[0].requests.errors | tostring'), trusted $(r "$state" '.stages[0].validity.trusted')"
done
printf '%4s | %15s | %15s | %17s | %15s | %13s\n' turn "bytes sent" "tokens sent" "tokens processed" "TTFT p50 ms" "cached share"
printf '%4s | %15s | %15s | %17s | %15s | %13s\n' "" "resend / kept" "resend / kept" "resend / kept" "resend / kept" "resend / kept"
for k in $(seq 0 $((TURNS - 1))); do
    t=".stages[0].per_turn[$k]"
    row() { # $1 = jq expression on the turn, $2 = printf format
        # The format is the caller's, by design (one per column).
        # shellcheck disable=SC2059
        printf "$2 / $2" "$(r resend "$t | $1")" "$(r previous-response-id "$t | $1")"
    }
    printf '%4s | %15s | %15s | %17s | %15s | %13s\n' "$k" \
        "$(row '.mean_request_bytes // 0' '%.0f')" \
        "$(row '.mean_sent_input_tokens // .mean_input_tokens' '%.0f')" \
        "$(row '.mean_input_tokens' '%.0f')" \
        "$(row '.ttft_ms.p50' '%.1f')" \
        "$(row '(.cached_share // 0) * 100' '%.0f %%')"
done
