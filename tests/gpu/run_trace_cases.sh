#!/usr/bin/env bash
# The timeline cases of issue #5 on a real GPU (prepared without one: see tests/gpu/README.md):
#
#   tests/gpu/run_trace_cases.sh BUILD_DIR OUT_DIR
#
#   ranks     torchrun --standalone --nproc-per-node 2 tests/gpu/torchrun_leak.py under
#             `gpuleak run` (2 GPUs; each rank on cuda:LOCAL_RANK, only rank 1 leaks):
#             `gpuleak report` over both captures must flag rank 1 (text and --ranks-json), and
#             `gpuleak merge` must name rank 1's process track "rank 1 — leaking ...".
#   kernels   tests/gpu/torch_loop.py with GPULEAK_CUPTI=1: the trace must hold kernel slices on
#             "GPU 0 / stream N" rows and matched launch flows ("s"/"f" with the same ids).
#   profiler  tests/gpu/torch_profiler.py with GPULEAK_CUPTI=1: torch.profiler still gets its CUDA
#             events (PROFILER_CUDA_EVENTS > 0), and gpuleak's trace still has its memory counters.
#
# Each case is bounded (timeout 60 s; they take a few seconds each, most of it importing torch).
# Writes OUT_DIR/summary.txt ("PASS|FAIL|SKIP case: why" per case) and each case's files under
# OUT_DIR/<case>/. Exit 0 when no case failed, 1 when one did, 2 on bad usage.
# Environment: PYTHON (python3), TORCHRUN (torchrun), TRACE_CASES='regex' to run only some.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"
if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
build_dir=$(cd "$1" 2>/dev/null && pwd) || {
  echo "run_trace_cases: no build folder $1" >&2
  exit 2
}
mkdir -p "$2" || exit 2
out=$(cd "$2" && pwd)
gpuleak=$build_dir/bin/gpuleak
python=${PYTHON:-python3}
torchrun=${TORCHRUN:-torchrun}
filter=${TRACE_CASES:-}
summary=$out/summary.txt
: >"$summary"
failed=0

use_hostlibs "$gpuleak" "$build_dir/gpu-tests/hostlibs"
record() {  # record STATUS CASE WHY
  printf '%s %s: %s\n' "$1" "$2" "$3" | tee -a "$summary"
  [[ $1 == FAIL ]] && failed=1
  return 0
}
selected() { [[ -z $filter || $1 =~ $filter ]]; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
torch_ok=0
timeout 60 "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && torch_ok=1

# One JSON check over a trace, in Python (json is in the standard library).
check_trace() {  # check_trace TRACE MODE
  "$python" - "$1" "$2" <<'PY'
import json, sys
path, mode = sys.argv[1], sys.argv[2]
events = json.load(open(path))
rows = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
about = next(e["args"] for e in events if e.get("ph") == "M" and e.get("name") == "gpuleak_trace")
counters = [e for e in events if e.get("ph") == "C" and str(e.get("name", "")).endswith(" live")]
if mode == "kernels":
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "gpu.kernel"]
    on_rows = [k for k in kernels if rows.get(k["tid"], "").startswith("GPU 0 / stream ")]
    s = sorted(e["id"] for e in events if e.get("ph") == "s")
    f = sorted(e["id"] for e in events if e.get("ph") == "f")
    print(f"kernels={len(kernels)} on_stream_rows={len(on_rows)} flows_s={len(s)} flows_f={len(f)} "
          f"note={about.get('gpu_activity')!r}")
    ok = len(kernels) > 0 and len(on_rows) == len(kernels) and len(s) > 0 and s == f and counters
    sys.exit(0 if ok else 1)
if mode == "memory":
    print(f"counter_points={len(counters)} note={about.get('gpu_activity')!r}")
    sys.exit(0 if counters else 1)
if mode == "merged":
    names = [e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"]
    print("processes:", names)
    leaking = [n for n in names if n.startswith("rank 1 \u2014 leaking")]
    others = [n for n in names if "leaking" in n and not n.startswith("rank 1 ")]
    sys.exit(0 if len(names) == 2 and len(leaking) == 1 and not others else 1)
PY
}

# ---- ranks: torchrun, 2 ranks, rank 1 leaks ---------------------------------------------------------
if selected ranks; then
  dir=$out/ranks
  rm -rf "$dir" && mkdir -p "$dir"
  if [[ $torch_ok == 0 ]]; then
    record SKIP ranks "torch not installed or no CUDA device"
  elif [[ $gpus -lt 2 ]]; then
    record SKIP ranks "needs 2 GPUs (found $gpus)"
  elif ! command -v "$torchrun" >/dev/null 2>&1; then
    record SKIP ranks "no torchrun"
  else
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout -k 5 60 "$gpuleak" run --out "$dir/ranks" -- \
      "$torchrun" --standalone --nproc-per-node 2 "$here/torchrun_leak.py" >"$dir/stdout" 2>"$dir/stderr"
    rc=$?
    mapfile -t captures < <(ls "$dir"/ranks/*.rank[01].gpuleak 2>/dev/null)
    if [[ $rc -ne 0 ]]; then
      record FAIL ranks "gpuleak run exited $rc (see $dir/stderr)"
    elif [[ ${#captures[@]} -ne 2 ]]; then
      record FAIL ranks "expected 2 rank captures, found ${#captures[@]}: $(ls "$dir/ranks" | tr '\n' ' ')"
    else
      "$gpuleak" report "${captures[@]}" --ranks-json "$dir/ranks.json" >"$dir/report.out" 2>"$dir/report.err"
      "$gpuleak" merge "${captures[@]}" -o "$dir/merged.trace.json" >"$dir/merge.out" 2>"$dir/merge.err"
      flagged=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["outliers"])' "$dir/ranks.json" 2>&1)
      if ! grep -q 'rank 1 grows .*/iter while the others stay flat' "$dir/report.err"; then
        record FAIL ranks "report did not flag rank 1 (see $dir/report.err)"
      elif [[ $flagged != "[1]" ]]; then
        record FAIL ranks "ranks.json outliers: $flagged"
      elif ! check_trace "$dir/merged.trace.json" merged >"$dir/check.out" 2>&1; then
        record FAIL ranks "merged trace: $(tail -1 "$dir/check.out")"
      else
        record PASS ranks "rank 1 flagged: $(grep 'rank 1 grows' "$dir/report.err"); $(tail -1 "$dir/check.out")"
      fi
    fi
  fi
fi

# ---- kernels: torch_loop.py with CUPTI activity -------------------------------------------------------
if selected kernels; then
  dir=$out/kernels
  rm -rf "$dir" && mkdir -p "$dir"
  if [[ $torch_ok == 0 ]]; then
    record SKIP kernels "torch not installed or no CUDA device"
  else
    TORCH_LOOP_STEPS=20 timeout -k 5 60 "$gpuleak" run --cupti --out "$dir" -- "$python" "$here/torch_loop.py" \
      >"$dir/stdout" 2>"$dir/stderr"
    rc=$?
    capture=$(ls "$dir"/*.gpuleak 2>/dev/null | head -1)
    if [[ $rc -ne 0 || -z $capture ]]; then
      record FAIL kernels "gpuleak run exited $rc, capture '${capture}' (see $dir/stderr)"
    elif ! "$gpuleak" trace "$capture" -o "$dir/trace.json" 2>"$dir/trace.err"; then
      record FAIL kernels "gpuleak trace failed: $(tail -1 "$dir/trace.err")"
    elif ! check_trace "$dir/trace.json" kernels >"$dir/check.out" 2>&1; then
      record FAIL kernels "$(tail -1 "$dir/check.out")"
    else
      record PASS kernels "$(tail -1 "$dir/check.out")"
    fi
  fi
fi

# ---- profiler: torch.profiler in the process, GPULEAK_CUPTI=1 ---------------------------------------
if selected profiler; then
  dir=$out/profiler
  rm -rf "$dir" && mkdir -p "$dir"
  if [[ $torch_ok == 0 ]]; then
    record SKIP profiler "torch not installed or no CUDA device"
  else
    timeout -k 5 60 "$gpuleak" run --cupti --out "$dir" -- "$python" "$here/torch_profiler.py" \
      >"$dir/stdout" 2>"$dir/stderr"
    rc=$?
    events=$(sed -n 's/^PROFILER_CUDA_EVENTS=\([0-9]*\)$/\1/p' "$dir/stdout" | tail -1)
    capture=$(ls "$dir"/*.gpuleak 2>/dev/null | head -1)
    if [[ $rc -ne 0 || -z $events || $events -eq 0 ]]; then
      record FAIL profiler "exit $rc, PROFILER_CUDA_EVENTS='${events}' (see $dir/stdout, $dir/stderr)"
    elif [[ -z $capture ]] || ! "$gpuleak" trace "$capture" -o "$dir/trace.json" 2>"$dir/trace.err"; then
      record FAIL profiler "no capture or no trace (see $dir/trace.err)"
    elif ! check_trace "$dir/trace.json" memory >"$dir/check.out" 2>&1; then
      record FAIL profiler "no memory counters: $(tail -1 "$dir/check.out")"
    else
      record PASS profiler "PROFILER_CUDA_EVENTS=$events; $(tail -1 "$dir/check.out")"
    fi
  fi
fi

echo "summary: $summary"
exit $failed
