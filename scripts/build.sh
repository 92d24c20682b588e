#!/usr/bin/env bash
# Configures and builds gpuleak into ./build (BUILD_DIR to change).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cuda_root=${GPULEAK_CUDA_ROOT:-/usr/local/cuda}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPULEAK_CUDA_ROOT="$cuda_root" >/dev/null
cmake --build "$build" -j"$(nproc)"
