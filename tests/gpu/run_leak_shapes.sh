#!/usr/bin/env bash
# Three leak shapes of a PyTorch loop (torch_leak_shapes.py: graph, scalar, clean), each under
# `gpuleak run` in three allocator modes, judged from the report JSON by check_leak_shapes.py.
#
#   tests/gpu/run_leak_shapes.sh BUILD_DIR OUT_DIR
#
# BUILD_DIR holds bin/gpuleak and lib/libgpuleak.so (and gpu-tests/hostlibs when the GPU machine
# lacks libdw). OUT_DIR receives summary.md (the table) and cases/<shape>-<allocator>/ (stdout,
# stderr, exit_status, captures/ with the capture and the report, report.md: the Markdown page).
# Allocator modes: default (caching allocator, segments), no-caching
# (PYTORCH_NO_CUDA_MEMORY_CACHING=1) and async (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync).
# Exit status: 0 when every run met its expectation, 1 when one did not, 77 without a GPU or
# without PyTorch, 2 on bad usage. PYTHON picks the interpreter (python3).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"
if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
skip_without_gpu
build_dir=$(cd "$1" 2>/dev/null && pwd) || {
  echo "run_leak_shapes: no build folder $1" >&2
  exit 2
}
gpuleak=$build_dir/bin/gpuleak
if [[ ! -x $gpuleak || ! -f $build_dir/lib/libgpuleak.so ]]; then
  echo "run_leak_shapes: $gpuleak or $build_dir/lib/libgpuleak.so missing" >&2
  exit 2
fi
python=${PYTHON:-python3}
if ! timeout 120 "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "SKIPPED: torch not installed or no CUDA device"
  exit 77
fi
use_hostlibs "$gpuleak" "$build_dir/gpu-tests/hostlibs"

mkdir -p "$2" || exit 2
out_dir=$(cd "$2" && pwd)
rm -rf "$out_dir/cases"

for shape in graph scalar clean; do
  for allocator in default no-caching async; do
    dir=$out_dir/cases/$shape-$allocator
    mkdir -p "$dir/captures"
    envs=(-u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_NO_CUDA_MEMORY_CACHING)
    case $allocator in
      no-caching) envs+=(PYTORCH_NO_CUDA_MEMORY_CACHING=1) ;;
      async) envs+=(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync) ;;
    esac
    start=$(date +%s%N)
    (cd "$dir" && env "${envs[@]}" timeout -k 10 120 "$gpuleak" run --out "$dir/captures" -- \
      "$python" "$here/torch_leak_shapes.py" "$shape" >"$dir/stdout" 2>"$dir/stderr")
    echo $? >"$dir/exit_status"
    for capture in "$dir"/captures/torch_leak_shapes.py.*.gpuleak; do  # the Markdown page, to read
      [[ -f $capture ]] && "$gpuleak" report --format markdown -o "$dir/report.md" "$capture" 2>>"$dir/stderr"
    done
    printf '%-7s %-11s exit %s in %d ms\n' "$shape" "$allocator" "$(cat "$dir/exit_status")" \
      $((($(date +%s%N) - start) / 1000000))
  done
done

"$python" "$here/check_leak_shapes.py" "$out_dir" "$gpuleak"
