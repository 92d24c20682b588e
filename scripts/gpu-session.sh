#!/usr/bin/env bash
# One batch on the GPU machine (the device tool): every GPU check of the project, in priority
# order, each stage under its own time limit so that a session cut short still returns what ran.
# Logs go under OUT (default /tmp/gpu-session): summary.txt (one line per stage), machine.txt,
# and one folder or log per stage. Build everything here first:
#   scripts/build.sh && scripts/bundle-runtime-libs.sh build && tests/gpu/build.sh build
# and carry it (README "GPU checks"). STAGES="matrix overhead" runs only those stages.
# Stage limits (seconds) can be overridden as LIMIT_<stage>=N. PARALLEL=1 runs the overhead
# benchmark alone first, then every other stage at once (16 cores and one or two H200s take it;
# it turns a sum of stage times into their maximum when device time is short, at the price of
# noisier wall-time figures in the advice stage's before/after timings).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gpu-session}
build=${BUILD:-build}
stages=${STAGES:-matrix overhead leak_shapes advice trace cublas frameworks observed pools retention jax_parts pools_cost}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
  nvcc --version 2>/dev/null | tail -n 1
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)' 2>&1
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} >"$out/machine.txt"

# stage NAME DEFAULT_LIMIT COMMAND...: runs it with its output in OUT/NAME.log.
stage() {
  local name=$1 limit=$2
  shift 2
  [[ " $stages " == *" $name "* ]] || return 0
  local var="LIMIT_$name"
  limit=${!var:-$limit}
  local t0=$SECONDS
  timeout --kill-after=5 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  local verdict=PASS
  ((rc == 124 || rc == 137)) && verdict="TIMEOUT (${limit}s)"
  ((rc != 0 && rc != 124 && rc != 137)) && verdict="FAIL (exit $rc)"
  echo "$name: $verdict after $((SECONDS - t0)) s" | tee -a "$summary"
}

# A stage is run in the background when PARALLEL=1 (except the overhead benchmark).
bg() {
  if [[ ${PARALLEL:-0} == 1 ]]; then
    stage "$@" &
  else
    stage "$@"
  fi
}

# Added cost per allocation pair, the four configurations alternately, pinned to two CPUs.
stage overhead 120 env WITH_CUPTI=1 ROUNDS="${ROUNDS:-11}" PAIRS=20000 REPS=9 PIN="taskset -c 2,3" \
  bench/run_overhead.sh "$build" "$build/gpu-tests/alloc_pair"
# The C++ capture paths with and without CUPTI, and one PyTorch mode with Python frames: the
# capture core's conformance (the other PyTorch modes, CuPy and JAX are in the full matrix).
bg matrix 150 env MATRIX_CASES="${MATRIX_CASES:-^(leaky|driver|async|vmm|memory|graph|oom|threads)|^torch_async$}" \
  tests/gpu/run_matrix.sh "$build" "$out/matrix"
[[ -x tests/gpu/run_leak_shapes.sh ]] && bg leak_shapes 150 tests/gpu/run_leak_shapes.sh "$build" "$out/leak_shapes"
[[ -x tests/gpu/run_advice.sh ]] && bg advice 120 tests/gpu/run_advice.sh "$build" "$out/advice"
[[ -x tests/gpu/run_trace_cases.sh ]] && bg trace 120 tests/gpu/run_trace_cases.sh "$build" "$out/trace"
[[ -x tests/gpu/run_cublas_paths.sh ]] && bg cublas 60 tests/gpu/run_cublas_paths.sh "$build" "$out/cublas"
wait
# The Python frameworks' stages run one after the other, never beside each other: JAX's default
# arena takes 75 % of the device, so two of them at once would fail for want of memory.
[[ -x tests/gpu/run_frameworks.sh ]] && stage frameworks 300 tests/gpu/run_frameworks.sh "$build" "$out/frameworks"
[[ -x tests/gpu/run_observed_loops.sh ]] && stage observed 240 tests/gpu/run_observed_loops.sh "$build" "$out/observed"
[[ -x tests/gpu/run_pools.sh ]] && stage pools 180 tests/gpu/run_pools.sh "$build" "$out/pools"
[[ -x tests/gpu/run_retention.sh ]] && stage retention 240 tests/gpu/run_retention.sh "$build" "$out/retention"
# What the per-object views of CuPy's pool and JAX's arena cost a step (issue #27 item 5): plain vs
# `gpuleak run --X segments` vs `gpuleak run`, interleaved, 3 rounds each (docs/benchmarks.md).
# Where JAX's sampler spends its time per array: each accessor, and the sample of this tree's package.
[[ -f bench/jax_sample_parts.py ]] && stage jax_parts 90 python3 bench/jax_sample_parts.py
[[ -f bench/pools_cost.py ]] && stage pools_cost 420 python3 bench/pools_cost.py --framework both \
  --gpuleak "$build/bin/gpuleak" --steps 200 --arrays 1000 --live 200 --repeat 3 --json "$out/pools_cost.json"

cat "$out/machine.txt" "$summary"
[[ -f $out/overhead.log ]] && cat "$out/overhead.log"
tail -n 40 "$out/matrix/matrix.md" 2>/dev/null
for f in leak_shapes/summary.md advice/advice.md trace/summary.txt frameworks/frameworks.log observed/observed.log \
  pools/pools.log retention/retention.log jax_parts.log pools_cost.log; do [[ -f $out/$f ]] && cat "$out/$f"; done
exit 0
