#!/usr/bin/env bash
# Configures and builds gpuleak into ./build (BUILD_DIR to change). With arguments, builds only
# those targets (scripts/demo.sh builds the CLI, the shim, the fake CUDA and the sample: about a
# third of the tree); without, everything: the tests, benchmarks and fuzzers too.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cuda_root=${GPULEAK_CUDA_ROOT:-/usr/local/cuda}
launcher=()
# ccache where it is installed: a rebuild (or a second checkout) recompiles only what changed.
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPULEAK_CUDA_ROOT="$cuda_root" "${launcher[@]}" >/dev/null
if [ $# -gt 0 ]; then
  cmake --build "$build" -j"$(nproc)" --target "$@"
else
  cmake --build "$build" -j"$(nproc)"
fi
