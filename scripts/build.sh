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
# Paths are hashed relative to the build folder, so the packaging tests' and the CI recipes' trees
# (tests/packaging) reuse this build's objects.
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-/} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
fi
# BUILD_TYPE picks the CMake build type: RelWithDebInfo, or Demo (scripts/demo.sh's quick build:
# -Og, no debug info, the reader's libraries in unity batches; top-level CMakeLists.txt).
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DGPULEAK_CUDA_ROOT="$cuda_root" \
  "${launcher[@]}" >/dev/null
if [ $# -gt 0 ]; then
  cmake --build "$build" -j"$(nproc)" --target "$@"
else
  cmake --build "$build" -j"$(nproc)"
fi
