#!/usr/bin/env bash
# CTest gpu.frameworks_sim: tests/gpu/run_frameworks.sh on the fake CUDA with the stand-ins here
# (README.md). Passes when every CuPy and JAX case passes (18) and PyTorch's 16 are SKIP. The
# stand-ins here have no jax.live_arrays and no cupy.cuda.PythonFunctionAllocator, so the cases of
# the per-object defaults (issue 27: jax-default-*, and CuPy's pool without marks) are left out:
# python_loop.cupy_* / python_loop.jax_* test them on the CPU, run_frameworks.sh on the GPU.
#
#   tests/gpu/sim/run_sim.sh BUILD_DIR OUT_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd) || exit 2
env -u OUT -u ONLY -u GPULEAK_TEST_TORCH_DEFAULT PATH="$here/bin:$PATH" \
  EXCEPT='^(jax-default-|cupy-pool-no-marks-|cupy-pool-threads-no-marks-|cupy-async-set-no-marks-)' \
  PYTHONPATH="$here/site-packages" PYTHONDONTWRITEBYTECODE=1 \
  PYFRAMES_CUDART="$build/fake_cuda/libcudart.so.13" \
  LD_LIBRARY_PATH="$build/fake_cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  GPULEAK_LIB="$build/lib/libgpuleak.so" GPULEAK_REPORT_TIMEOUT=0 \
  "$here/../run_frameworks.sh" "$build" "$2"
status=$?
summary=$(tail -1 "$2/frameworks.log" 2>/dev/null)
if [[ $status -ne 0 || $summary != "run_frameworks: 18 PASS, 0 FAIL, 16 SKIP;"* ]]; then
  echo "FAIL: expected exit 0 and 18 PASS, 0 FAIL, 16 SKIP; got exit $status, '$summary'"
  exit 1
fi
echo "ok: $summary"
