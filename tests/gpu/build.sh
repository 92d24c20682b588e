#!/usr/bin/env bash
# Builds the GPU conformance programs (tests/gpu/*.cu, driver_api.cpp) with nvcc into
# BUILD_DIR/gpu-tests/. Needs the CUDA toolkit, not a GPU: build here, carry BUILD_DIR to the GPU
# machine, run tests/gpu/run_matrix.sh there.
#
#   tests/gpu/build.sh [BUILD_DIR]        (default: <repo>/build)
#
# Environment: NVCC (default /usr/local/cuda/bin/nvcc), CUDA_LIB_DIR (the RUNPATH given to the
# -cudart shared programs; default /usr/local/cuda/lib64, where the GPU machine has libcudart.so.13),
# GPU_TESTS_FORCE=1 rebuilds everything.
#
# Code: sm_90 machine code plus compute_90 PTX, so that the programs run on any newer GPU by JIT.
# Also copies the non-glibc shared libraries that the gpuleak CLI needs (libdw, libelf) into
# BUILD_DIR/gpu-tests/hostlibs/: run_matrix.sh uses them only when the GPU machine lacks them.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build_dir=${1:-$repo/build}
mkdir -p "$build_dir"
build_dir=$(cd "$build_dir" && pwd)
out=$build_dir/gpu-tests
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
cuda_lib_dir=${CUDA_LIB_DIR:-/usr/local/cuda/lib64}

if [[ ! -x $nvcc ]]; then
  echo "build.sh: no nvcc at $nvcc (set NVCC)" >&2
  exit 1
fi
mkdir -p "$out"

common=(-std=c++17 -O1 -g -lineinfo -arch=sm_90 -gencode "arch=compute_90,code=compute_90"
        -Xcompiler -fno-omit-frame-pointer
        -Xcompiler -Wall -I"$here")
shared_rt=(-cudart shared -DGPU_TEST_SHARED_CUDART -Xlinker "-rpath=$cuda_lib_dir")

built=0
skipped=0
# build NAME SOURCES... -- FLAGS...
build() {
  local name=$1
  shift
  local sources=() flags=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    sources+=("$1")
    shift
  done
  [[ $# -gt 0 ]] && shift
  flags=("$@")
  local target=$out/$name
  if [[ ${GPU_TESTS_FORCE:-0} != 1 && -x $target ]]; then
    local newer=0 f
    for f in "${sources[@]}" "$here/gpu_common.h" "$here/build.sh"; do
      [[ $f -nt $target ]] && newer=1
    done
    if [[ $newer == 0 ]]; then
      skipped=$((skipped + 1))
      return 0
    fi
  fi
  echo "nvcc -> gpu-tests/$name"
  "$nvcc" "${common[@]}" "${flags[@]}" -o "$target.tmp" "${sources[@]}"
  mv -f "$target.tmp" "$target"
  built=$((built + 1))
}

# async_pools_ptsz.cu must be compiled with --default-stream per-thread (the _ptsz entry points):
# one object of its own, then linked with the legacy-stream main.
build_ptsz_object() {
  local obj=$out/async_pools_ptsz.o
  if [[ ${GPU_TESTS_FORCE:-0} == 1 || ! -f $obj || $here/async_pools_ptsz.cu -nt $obj || $here/gpu_common.h -nt $obj ||
        $here/build.sh -nt $obj ]]; then
    echo "nvcc -> gpu-tests/async_pools_ptsz.o (--default-stream per-thread)"
    "$nvcc" "${common[@]}" --default-stream per-thread -c -o "$obj.tmp" "$here/async_pools_ptsz.cu"
    mv -f "$obj.tmp" "$obj"
    rm -f "$out/gpu_async_pools"  # relink
  fi
}

build gpu_leaky_static "$here/leaky_loop.cu"
build gpu_leaky_shared "$here/leaky_loop.cu" -- "${shared_rt[@]}"
build gpu_driver_api "$here/driver_api.cpp" -- -cudart none -lcuda
build_ptsz_object
build gpu_async_pools "$here/async_pools.cu" "$out/async_pools_ptsz.o"
build gpu_vmm "$here/vmm.cu"
build gpu_memory_kinds "$here/memory_kinds.cu"
build gpu_memory_kinds_shared "$here/memory_kinds.cu" -- "${shared_rt[@]}"
build gpu_graph_mem_nodes "$here/graph_mem_nodes.cu"
build gpu_oom "$here/oom.cu"
build gpu_threads "$here/threads.cu" -- -Xcompiler -pthread
build gpu_cublas_paths "$here/cublas_paths.cu" -- -lcublas
# The loop advice programs (run_advice.sh): the C API header for iteration marks.
build gpu_advice_loops "$here/advice_loops.cu" -- -I"$repo/include"
# The overhead benchmark (bench/run_overhead.sh), against the real static runtime.
build alloc_pair "$repo/bench/alloc_pair.cpp" -- -x cu

# The CLI's own shared libraries that a stock Ubuntu may lack (elfutils): copied, used by
# run_matrix.sh only when `gpuleak` cannot start without them.
cli=$build_dir/bin/gpuleak
if [[ -x $cli ]]; then
  mkdir -p "$out/hostlibs"
  while read -r lib path; do
    case $lib in
      libdw.so.* | libelf.so.*) cp -fL "$path" "$out/hostlibs/$lib" ;;
    esac
  done < <(ldd "$cli" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
fi

# What the driver API program must not do: link the toolkit's stub libcuda at run time.
if readelf -d "$out/gpu_driver_api" | grep -q 'stubs'; then
  echo "build.sh: gpu_driver_api has the stubs folder in its RUNPATH" >&2
  exit 1
fi
echo "build.sh: $built built, $skipped up to date, in $out"
