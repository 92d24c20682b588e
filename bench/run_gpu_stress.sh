#!/usr/bin/env bash
# Issue #29 item 5 on a GPU host, in one device call: the 8-thread stress under `gpuleak run` with
# the analysis while the program ends (the default) and after it (GPULEAK_EARLY_ANALYSIS=0),
# interleaved with plain rounds, and how long each kind of process lives on after its capture is
# closed (bench/exit_gap.py): the time the early analysis can use.
#
#   bench/run_gpu_stress.sh CARRY_DIR [ROUNDS]     (CARRY_DIR: scripts/gpu-carry.sh's folder)
# Writes everything to stdout; a log under $OUT (stress.log) when $OUT is set.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 CARRY_DIR [ROUNDS]" >&2; exit 2; }
carry=$(cd "$1" && pwd) || exit 2
rounds=${2:-9}
log=${OUT:+$OUT/stress.log}
log=${log:-/dev/null}
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
  echo "== the stress: plain, gpuleak run (early), gpuleak run (late), preload+report, capture, analysis"
  python3 "$here/async_stress.py" "$carry" --rounds "$rounds" --late
  echo "== exit gap: async_stress_bench 8 20000"
  GPULEAK_SHIM=$carry/lib/libgpuleak.so GPULEAK_NVML=0 python3 "$here/exit_gap.py" --rounds 5 -- \
    "$carry/bench/async_stress_bench" 8 20000
  if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "== exit gap: a PyTorch process with 100 tensors"
    GPULEAK_SHIM=$carry/lib/libgpuleak.so python3 "$here/exit_gap.py" --rounds 3 -- python3 -c \
      "import torch; x=[torch.empty(1<<20, device='cuda') for _ in range(100)]; torch.cuda.synchronize()"
  fi
  date -u
} 2>&1 | tee "$log"
