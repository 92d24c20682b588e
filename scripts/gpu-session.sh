#!/usr/bin/env bash
# One batch on the GPU machine (the device tool): the conformance matrix, the overhead benchmark,
# and the machine facts, all logged under OUT (default /tmp/gpu-session). Build everything here
# first: scripts/build.sh && scripts/bundle-runtime-libs.sh build && tests/gpu/build.sh build
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gpu-session}
build=${BUILD:-build}
mkdir -p "$out"
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version 2>/dev/null | tail -n 1
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)' 2>&1
} > "$out/machine.txt"
tests/gpu/run_matrix.sh "$build" "$out/matrix" > "$out/matrix-stdout.log" 2>&1
echo "matrix exit: $?" >> "$out/machine.txt"
WITH_CUPTI=1 ROUNDS=${ROUNDS:-7} bench/run_overhead.sh "$build" "$build/gpu-tests/alloc_pair" > "$out/overhead.txt" 2>&1
echo "overhead exit: $?" >> "$out/machine.txt"
cat "$out/machine.txt" "$out/overhead.txt"
tail -n 45 "$out/matrix/matrix.md" 2>/dev/null
