#!/usr/bin/env bash
# torch.adapter_compiles: src/torch_adapter/trace_tracker.cpp compiles against a PyTorch's own
# headers, exports gpuleak_torch_attach, and needs nothing of PyTorch's but the allocator object
# (the virtual call and TraceEntry come from the headers). The headers: $GPULEAK_TORCH_INCLUDE
# (a torch/include folder), else the include folder of an importable torch; without either the
# test says SKIPPED (exit 77): CI has no PyTorch. The GPU machine runs the adapter for real
# (tests/gpu/run_frameworks.sh, torch-default cases).
#   compile_test.sh <source dir>
set -euo pipefail
src=$1
inc=${GPULEAK_TORCH_INCLUDE:-}
if [[ -z $inc ]]; then
  inc=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))' 2>/dev/null) || true
fi
if [[ -z $inc || ! -f $inc/c10/cuda/CUDACachingAllocator.h ]]; then
  echo "SKIPPED: no PyTorch headers (set GPULEAK_TORCH_INCLUDE to a torch/include folder)"
  exit 77
fi
cuda=${CUDA_HOME:-/usr/local/cuda}/include
[[ -f $cuda/cuda_runtime_api.h ]] || { echo "SKIPPED: no CUDA headers at $cuda"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpuleak-torch-XXXXXX")
trap 'rm -rf "$work"' EXIT
${CXX:-c++} -std=c++17 -O2 -fPIC -shared -Wall -Wextra -Werror -D_GLIBCXX_USE_CXX11_ABI=1 \
  -isystem "$inc" -isystem "$cuda" "$src/src/torch_adapter/trace_tracker.cpp" -o "$work/libgpuleak_torch.so"
nm -D --defined-only "$work/libgpuleak_torch.so" | grep -q ' T gpuleak_torch_attach$' ||
  { echo "FAIL: gpuleak_torch_attach is not exported"; exit 1; }
# Everything PyTorch-specific is inline in the headers but the allocator object itself.
c10=$(nm -D --undefined-only "$work/libgpuleak_torch.so" | awk '{print $2}' | grep -E '^_ZN?K?3c10|^_ZTV.*c10' || true)
[[ $c10 == _ZN3c104cuda20CUDACachingAllocator9allocatorE ]] ||
  { echo "FAIL: the adapter needs more of c10 than the allocator object:"; echo "$c10"; exit 1; }
echo "ok: compiled against $inc; needs only c10::cuda::CUDACachingAllocator::allocator"
