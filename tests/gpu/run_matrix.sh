#!/usr/bin/env bash
# The GPU conformance matrix (DESIGN.md, "Capture: the conformance matrix"): runs every allocation
# path on a real NVIDIA GPU under gpuleak and compares what was captured with what each program
# says it did (its EXPECT lines; see gpu_common.h and check_case.py).
#
#   tests/gpu/run_matrix.sh BUILD_DIR [OUT_DIR]
#
# BUILD_DIR holds bin/gpuleak, lib/libgpuleak.so and gpu-tests/ (tests/gpu/build.sh). OUT_DIR
# (default ${OUT:-/tmp/gpu-matrix}) receives matrix.md (the table), matrix.log (details) and
# cases/<case>/ (stdout, stderr, captures and reports of each run).
# Exit status: 0 when no case failed, 1 when one did, 77 (skipped) without a GPU or without the
# test programs, 2 on bad usage.
# Environment: MATRIX_CASES='regex' runs only the cases whose name matches; PYTHON (python3).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 BUILD_DIR [OUT_DIR]" >&2
  exit 2
fi
skip_without_gpu
build_dir=$(cd "$1" 2>/dev/null && pwd) || {
  echo "SKIPPED: no build folder $1"
  exit 77
}
tests_dir=$build_dir/gpu-tests
for prog in gpu_leaky_static gpu_leaky_shared gpu_driver_api gpu_async_pools gpu_vmm gpu_memory_kinds \
  gpu_memory_kinds_shared gpu_graph_mem_nodes gpu_oom gpu_threads; do
  if [[ ! -x $tests_dir/$prog ]]; then
    echo "SKIPPED: GPU test programs missing ($tests_dir/$prog); build them with tests/gpu/build.sh $build_dir"
    exit 77
  fi
done
gpuleak=$build_dir/bin/gpuleak
shim=$build_dir/lib/libgpuleak.so
if [[ ! -x $gpuleak || ! -f $shim ]]; then
  echo "run_matrix: $gpuleak or $shim missing: build gpuleak first" >&2
  exit 1
fi

out_dir=${2:-${OUT:-/tmp/gpu-matrix}}
mkdir -p "$out_dir" || exit 2
out_dir=$(cd "$out_dir" && pwd)
rm -rf "$out_dir/cases"
mkdir -p "$out_dir/cases"
log=$out_dir/matrix.log
md=$out_dir/matrix.md
: >"$log"
python=${PYTHON:-python3}
filter=${MATRIX_CASES:-}

say() { printf '%s\n' "$*" | tee -a "$log"; }

# The CLI links elfutils; where the GPU machine lacks them, use the copies build.sh made.
hostlibs_note="no"
if use_hostlibs "$gpuleak" "$tests_dir/hostlibs"; then
  hostlibs_note="yes ($tests_dir/hostlibs on LD_LIBRARY_PATH)"
fi
if ! "$gpuleak" --help >/dev/null 2>&1; then
  say "run_matrix: $gpuleak does not start:"
  "$gpuleak" --help 2>&1 | head -5 | tee -a "$log"
  exit 1
fi

# ---- what this machine is -------------------------------------------------------------------------
smi_query() { nvidia-smi --query-gpu="$1" --format=csv,noheader 2>/dev/null | head -1; }
gpu_name=$(smi_query name)
driver=$(smi_query driver_version)
gpu_mem=$(smi_query memory.total)
cuda_driver=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)
cuda_toolkit=$( (/usr/local/cuda/bin/nvcc --version 2>/dev/null || true) | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
py_version=$("$python" --version 2>&1)
pkg_version() {  # pkg_version MODULE: its version, or "not installed (why)"
  timeout 120 "$python" - "$1" 2>/dev/null <<'PY' | tail -1
import importlib, sys
name = sys.argv[1]
try:
    m = importlib.import_module(name)
except Exception as e:  # ImportError, or a broken install
    print("not installed (%s: %s)" % (type(e).__name__, str(e)[:80]))
    sys.exit(0)
v = str(getattr(m, "__version__", "?"))
if name == "torch":
    v += " (CUDA %s, GPU available: %s)" % (m.version.cuda, m.cuda.is_available())
print(v)
PY
}
torch_version=$(pkg_version torch)
cupy_version=$(pkg_version cupy)
jax_version=$(pkg_version jax)
shim_version=$("$gpuleak" --version 2>/dev/null | head -1)

facts=(
  "date|$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  "host|$(uname -n) ($(uname -r))"
  "GPU|${gpu_name:-?} (${gpu_mem:-?})"
  "driver|${driver:-?} (CUDA ${cuda_driver:-?})"
  "CUDA toolkit|${cuda_toolkit:-not found}"
  "python|$py_version"
  "torch|$torch_version"
  "cupy|$cupy_version"
  "jax|$jax_version"
  "gpuleak|${shim_version:-?} ($build_dir)"
  "bundled CLI libraries used|$hostlibs_note"
)
{
  echo "# gpuleak GPU conformance matrix"
  echo
  echo "| | |"
  echo "|---|---|"
  for f in "${facts[@]}"; do echo "| ${f%%|*} | ${f#*|} |"; done
  echo
  echo "| case | path | expected | seen | result |"
  echo "|---|---|---|---|---|"
} >"$md"
for f in "${facts[@]}"; do echo "${f%%|*}: ${f#*|}"; done | tee -a "$log"

pass=0 fail=0 skip=0
failed_cases=()

record() {  # record CASE PATH RESULT EXPECTED SEEN
  printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$4" "$5" "$3" >>"$md"
  say "== $1: $3"
  case $3 in
    PASS) pass=$((pass + 1)) ;;
    SKIP) skip=$((skip + 1)) ;;
    *)
      fail=$((fail + 1))
      failed_cases+=("$1")
      ;;
  esac
}

selected() { [[ -z $filter ]] || [[ $1 =~ $filter ]]; }

# run_case NAME PATH CHECK TIMEOUT MODE PROGRAM [ENV=VALUE...] -- CMD ARGS...
#   MODE: cli (gpuleak run), cupti (gpuleak run, GPULEAK_CUPTI=1, checks CUPTI), preload (plain
#   LD_PRELOAD, default ./gpuleak-out). PROGRAM: the capture's program name (for picking it).
run_case() {
  local name=$1 path=$2 check=$3 limit=$4 mode=$5 program=$6
  shift 6
  local envs=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    envs+=("$1")
    shift
  done
  shift
  selected "$name" || return 0
  local dir=$out_dir/cases/$name
  mkdir -p "$dir"
  say "-- $name: $*${envs[*]:+ (env ${envs[*]})}"
  local captures=$dir/capture extra=() rc=0 start end
  start=$(date +%s)
  case $mode in
    cli | cupti)
      [[ $mode == cupti ]] && envs+=(GPULEAK_CUPTI=1) && extra+=(--cupti)
      (cd "$dir" && env "${envs[@]}" timeout -k 10 "$limit" "$gpuleak" run --out "$captures" -- "$@" \
        </dev/null >"$dir/stdout" 2>"$dir/stderr")
      rc=$?
      ;;
    preload)
      captures=$dir/gpuleak-out
      (cd "$dir" && timeout -k 10 "$limit" env -u GPULEAK_OUT -u GPULEAK_UNDER_RUN "${envs[@]}" \
        LD_PRELOAD="$shim" "$@" </dev/null >"$dir/stdout" 2>"$dir/stderr")
      rc=$?
      ;;
  esac
  end=$(date +%s)
  say "   exit $rc after $((end - start)) s"
  local result
  result=$("$python" "$here/check_case.py" --name "$name" --check "$check" --dir "$dir" --captures "$captures" \
    --rc "$rc" --gpuleak "$gpuleak" --program "$program" "${extra[@]}" 2>&1)
  printf '%s\n' "$result" | grep -v '^RESULT' >>"$log"
  local line status expected seen
  line=$(printf '%s\n' "$result" | grep '^RESULT' | tail -1)
  if [[ -z $line ]]; then
    printf '%s\n' "$result" | tail -5 >>"$log"
    record "$name" "$path" FAIL "-" "checker produced no result"
    return 0
  fi
  IFS=$'\t' read -r _ status expected seen <<<"$line"
  record "$name" "$path" "$status" "$expected" "$seen"
}

# ---- C++ programs: each under gpuleak run, and again with CUPTI on --------------------------------
native_cases=(
  "leaky_static|nvcc default (static cudart): dlsym(libcuda) + cuGetProcAddress|gpu_leaky_static"
  "leaky_shared|-cudart shared: libcudart.so.13 -> cuGetProcAddress, runtime labels|gpu_leaky_shared"
  "driver_api|driver API through the PLT (-lcuda): cuMemAlloc_v2, Pitch, Managed, HostAlloc, AllocHost, cuArrayCreate|gpu_driver_api"
  "async_pools|cuMemAllocAsync, FromPoolAsync, _ptsz (per-thread stream), pool create/trim/destroy|gpu_async_pools"
  "vmm|cuMemCreate/Map/Unmap/Release via cudaGetDriverEntryPointByVersion|gpu_vmm"
  "memory_kinds|managed, pitched, 3D, host-pinned, host-registered, arrays (static cudart)|gpu_memory_kinds"
  "memory_kinds_shared|the same through libcudart.so.13 (runtime labels)|gpu_memory_kinds_shared"
  "graph_mem_nodes|stream capture: cudaMallocAsync in a graph = graph reservation|gpu_graph_mem_nodes"
  "oom|cudaMalloc 16 GiB chunks until out of memory|gpu_oom"
  "threads|8 threads x 500 cudaMallocAsync/cudaFreeAsync on own streams|gpu_threads"
)
for entry in "${native_cases[@]}"; do
  IFS='|' read -r name path prog <<<"$entry"
  run_case "$name" "$path" native 60 cli "$prog" -- "$tests_dir/$prog"
done
for entry in "${native_cases[@]}"; do
  IFS='|' read -r name path prog <<<"$entry"
  run_case "$name+cupti" "$path; GPULEAK_CUPTI=1: uncaptured=0" native 60 cupti "$prog" -- "$tests_dir/$prog"
done
run_case "leaky_static@preload" "plain LD_PRELOAD=libgpuleak.so, no CLI: ./gpuleak-out + stderr summary" \
  preload 60 preload gpu_leaky_static -- "$tests_dir/gpu_leaky_static"

# ---- Python frameworks ---------------------------------------------------------------------------
torch_ok=1
if ! timeout 120 "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
  >/dev/null 2>&1; then
  torch_ok=0
fi
torch_case() {  # torch_case NAME PATH CHECK [ENV...]
  local name=$1 path=$2 check=$3
  shift 3
  if [[ $torch_ok == 0 ]]; then
    selected "$name" && record "$name" "$path" SKIP "-" "torch not installed or no CUDA device"
    return 0
  fi
  run_case "$name" "$path" "$check" 180 cli torch_loop.py "$@" -- "$python" "$here/torch_loop.py"
}
torch_case torch_default "PyTorch default caching allocator (segments)" torch-default
torch_case torch_no_caching "PYTORCH_NO_CUDA_MEMORY_CACHING=1 (per-tensor cudaMalloc)" torch-pertensor \
  PYTORCH_NO_CUDA_MEMORY_CACHING=1
torch_case torch_async "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (per-tensor)" torch-pertensor \
  PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
torch_case torch_expandable "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (VMM via driver pointers)" \
  torch-expandable PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
if [[ $torch_ok == 0 ]]; then
  selected torch_profiler && record torch_profiler "torch.profiler under GPULEAK_CUPTI=1" SKIP "-" \
    "torch not installed or no CUDA device"
else
  run_case torch_profiler "torch.profiler (CPU+CUDA) under GPULEAK_CUPTI=1: the app keeps its profiler" \
    profiler 180 cli torch_profiler.py GPULEAK_CUPTI=1 -- "$python" "$here/torch_profiler.py"
fi
run_case cupy "CuPy default memory pool" python 120 cli cupy_jax.py -- "$python" "$here/cupy_jax.py" cupy
run_case jax "JAX, XLA_PYTHON_CLIENT_ALLOCATOR=platform" python 180 cli cupy_jax.py \
  XLA_PYTHON_CLIENT_ALLOCATOR=platform -- "$python" "$here/cupy_jax.py" jax

# ---- summary -------------------------------------------------------------------------------------
{
  echo
  echo "**$pass passed, $fail failed, $skip skipped.**${failed_cases[*]:+ Failed: ${failed_cases[*]}}"
} >>"$md"
say ""
say "$pass passed, $fail failed, $skip skipped${failed_cases[*]:+ (failed: ${failed_cases[*]})}"
say "table: $md"
say "log:   $log"
[[ $fail -eq 0 ]]
