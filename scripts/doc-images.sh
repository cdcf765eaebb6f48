#!/usr/bin/env bash
# Regenerates the pictures in docs/img/ (one of each plot kind, shown by docs/reports.md)
# from runs of the example scenarios against the embedded simulator. The plans are seeded,
# so every run sends the same requests; the latencies are measured, so the curves move a
# little from one regeneration to the next.
#
#   scripts/doc-images.sh [BINARY]     (default: target/debug/infermeter, built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/debug/infermeter}
[ -x "$BIN" ] || cargo build -q
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
run() {
    # The verdicts do not matter here, only the plots: any exit code but "could not run".
    local code=0
    "$BIN" run "$1" --out "$2" --quiet --no-hostname --untrusted judge >"$DIR/log" 2>&1 || code=$?
    if [ "$code" -eq 2 ] || [ "$code" -eq 3 ]; then
        cat "$DIR/log" >&2
        echo "run of $1 failed (exit $code)" >&2
        exit 1
    fi
}
run scenarios/quickstart.kdl "$DIR/quickstart"
run scenarios/latency-profile.kdl "$DIR/profile-a"
run scenarios/latency-profile.kdl "$DIR/profile-b"
run scenarios/telemetry.kdl "$DIR/telemetry"
"$BIN" compare "$DIR/profile-a/results.json" "$DIR/profile-b/results.json" \
    --plot "$DIR/compare.svg" >/dev/null 2>&1 || true

mkdir -p docs/img
cp "$DIR/quickstart/stage-poisson-latency-cdf.svg" docs/img/latency-distribution.svg
cp "$DIR/quickstart/stage-poisson-timeline.svg" docs/img/timeline.svg
cp "$DIR/profile-a/profile-profile.svg" docs/img/profile.svg
cp "$DIR/compare.svg" docs/img/compare-profile.svg
cp "$(find "$DIR" -name "compare-stage-profile-20rps-latency*.svg" | head -n 1)" docs/img/compare-distribution.svg
server=$(find "$DIR/telemetry" -name 'stage-*-server.svg' | sort | head -n 1)
cp "$server" docs/img/server-timeline.svg
ls -l docs/img/*.svg
