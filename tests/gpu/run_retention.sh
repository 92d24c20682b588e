#!/usr/bin/env bash
# Who keeps it (issue #30) on a real GPU with PyTorch: tests/gpu/torch_retention.py's modes under
# `gpuleak run`, judged by check_retention_case.py: each leaking mode's first leak group must carry
# retained_by naming the container (and the text summary its "kept by" line), the clean mode none;
# the path must come from the walk the case is about (history: main()'s return, oom: the
# out-of-memory) and no walk may stop at the time budget (issue #30 item 4); each walk's time and
# objects are printed. About 15 s a case on the H200 (an `import torch`, CUDA's start, two reports).
#
#   tests/gpu/run_retention.sh BUILD_DIR [OUT_DIR]
#
# Prints PASS/FAIL/SKIP per case; exit status 1 on any FAIL, 77 without a GPU or torch, else 0.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"
[[ $# -ge 1 ]] || { echo "usage: $0 BUILD_DIR [OUT_DIR]" >&2; exit 2; }
skip_without_gpu
build=$(cd "$1" && pwd) || exit 2
out=${2:-${OUT:-/tmp}/retention}
mkdir -p "$out" || exit 2
py=${PYTHON:-python3}
# gpuleak's Python package from this checkout (the carried build folder has none next to its CLI).
GPULEAK_PYTHONDIR=$(cd "$here/../../tools/python" && pwd) || exit 2
export GPULEAK_PYTHONDIR
use_hostlibs "$build/bin/gpuleak" "$build/gpu-tests/hostlibs"
$py -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' || { echo "SKIP: no torch with CUDA"; exit 77; }
fail=0
# mode | the walks whose path it may be, the first of them one that must have run (exit, oom,
# return: a module global's path is the same at main()'s return, when main() ran a second) | the
# text retained_by must contain ("-": no retained_by and no "kept by" line)
cases=(
  'history|return|`history` (list, local of main at torch_retention.py:'
  'serving|exit,return|`__main__.server` (Server, module global) -> .sessions (dict) -> ['
  'lightning|exit,return|`__main__.trainer_module` (LitModel, module global) -> .outputs (list) -> ['
  'helper|exit,return|`retention_helpers._bank` (list, module global) -> ['
  'autograd|exit,return|`__main__.losses` (list, module global) -> [60 items] -> Tensor -> its autograd graph ('
  'oom|oom|`history` (list, local of main at torch_retention.py:'
  'clean|exit|-'
)
stage_start=$SECONDS
for c in "${cases[@]}"; do
  IFS='|' read -r mode when want <<<"$c"
  dir=$out/$mode
  rm -rf "$dir" && mkdir -p "$dir"
  case_start=$SECONDS
  (cd "$here" && timeout 120 "$build/bin/gpuleak" run --out "$dir" --quiet --no-report -- $py torch_retention.py "$mode" \
     >"$dir/stdout" 2>"$dir/stderr")
  rc=$?
  capture=$(ls "$dir"/*.gpuleak 2>/dev/null | head -1)
  if [[ $rc -ne 0 || -z $capture ]]; then echo "FAIL $mode: exit $rc, capture '${capture}'"; fail=1; continue; fi
  "$build/bin/gpuleak" report --json "$capture" >"$dir/report.json" 2>"$dir/report.err"
  "$build/bin/gpuleak" report --format text "$capture" >"$dir/summary.txt" 2>>"$dir/report.err"
  $py "$here/check_retention_case.py" --mode "$mode" --when "$when" --want "$want" --report "$dir/report.json" \
      --summary "$dir/summary.txt" --seconds $((SECONDS - case_start))
  [[ $? -eq 0 ]] || fail=1
done
echo "retention stage: $((SECONDS - stage_start)) s"
exit $fail
