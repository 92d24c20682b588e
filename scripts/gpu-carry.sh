#!/usr/bin/env bash
# Makes the folder the device tool carries to the GPU machine (64 MiB at most): the CLI, the shim
# and its bundled libraries, its data (share/: the PyTorch adapter's source), and the nvcc-built GPU
# test programs, stripped of debug sections.
# usage: scripts/gpu-carry.sh [BUILD_DIR [CARRY_DIR]]   (defaults: build, build-gpu)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
carry=${2:-build-gpu}
scripts/bundle-runtime-libs.sh "$build" >/dev/null
tests/gpu/build.sh "$build" >/dev/null
rm -rf "$carry"
mkdir -p "$carry"
cp -a "$build/bin" "$build/lib" "$build/share" "$build/gpu-tests" "$carry/"
# The fake CUDA's pair benchmark, to time the hook on the GPU host's quiet CPU without the GPU's
# own (bimodal) cost: run it with LD_LIBRARY_PATH=$carry/fake.
mkdir -p "$carry/fake"
cp -a "$build/bench/alloc_pair_bench" "$build/bench/hook_parts" "$build"/fake_cuda/lib*.so* "$carry/fake/"
# The 8-thread stress of issue #15 (bench/async_stress.py CARRY_DIR): its program against the GPU
# host's driver, so without the RUNPATH to this machine's fake (the fake's libcuda would be found
# there if the folder existed on the GPU host).
mkdir -p "$carry/bench"
cp -a "$build/bench/async_stress_bench" "$carry/bench/"
if command -v patchelf >/dev/null; then patchelf --remove-rpath "$carry/bench/async_stress_bench"; fi
strip --strip-debug "$carry/bin/gpuleak" "$carry/lib/libgpuleak.so"
size=$(du -sm "$carry" | cut -f1)
echo "carry folder $carry: ${size} MiB"
if ((size > 64)); then
  echo "gpu-carry: $carry is over the device tool's 64 MiB" >&2
  exit 1
fi
