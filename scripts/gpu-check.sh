#!/usr/bin/env bash
# Prints every NVML reading infermeter takes, per GPU, or "no NVML: …" on a machine without one.
# Builds only the library and a small example (dev profile unless GPU_CHECK_RELEASE=1).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=()
if [[ "${GPU_CHECK_RELEASE:-0}" == "1" ]]; then profile=(--release); fi
exec cargo run --quiet "${profile[@]}" --example gpu_check
