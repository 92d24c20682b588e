#!/usr/bin/env bash
# Who keeps it (issue #30) on a real GPU with PyTorch: tests/gpu/torch_retention.py's modes under
# `gpuleak run`; each leaking mode's first leak group must carry retained_by naming the container
# (and the text summary its "kept by" line), the clean mode none.
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
# mode | the text retained_by must contain ("-": no retained_by and no "kept by" line)
cases=(
  'history|`history` (list, local of main at torch_retention.py:'
  'serving|`__main__.server` (Server, module global) -> .sessions (dict) -> ['
  'lightning|`__main__.trainer_module` (LitModel, module global) -> .outputs (list) -> ['
  'helper|`retention_helpers._bank` (list, module global) -> ['
  'autograd|`__main__.losses` (list, module global) -> [60 items] -> Tensor -> its autograd graph ('
  'oom|`history` (list, local of main at torch_retention.py:'
  'clean|-'
)
for c in "${cases[@]}"; do
  mode=${c%%|*} want=${c#*|}
  dir=$out/$mode
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$here" && timeout 300 "$build/bin/gpuleak" run --out "$dir" --quiet --no-report -- $py torch_retention.py "$mode" \
     >"$dir/stdout" 2>"$dir/stderr")
  rc=$?
  capture=$(ls "$dir"/*.gpuleak 2>/dev/null | head -1)
  if [[ $rc -ne 0 || -z $capture ]]; then echo "FAIL $mode: exit $rc, capture '${capture}'"; fail=1; continue; fi
  "$build/bin/gpuleak" report --json "$capture" >"$dir/report.json" 2>"$dir/report.err"
  "$build/bin/gpuleak" report --format text "$capture" >"$dir/summary.txt" 2>>"$dir/report.err"
  WANT=$want MODE=$mode $py - "$dir/report.json" "$dir/summary.txt" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1])); summary = open(sys.argv[2]).read()
want, mode = os.environ["WANT"], os.environ["MODE"]
groups = r.get("leak_groups") or []
kept = [((g.get("retained_by") or {}).get("text") or "") for g in groups]
lines = [l.strip() for l in summary.splitlines() if l.strip().startswith("kept by ")]
walks = ((r.get("run") or {}).get("retention") or {}).get("walks") or []
took = ", ".join("%s %.0f ms (%d objects, %s)" % (w["event"], w["duration_ns"] / 1e6, w["objects"], w["stopped"]) for w in walks)
if want == "-":
    ok = r.get("verdict") == "clean" and not any(kept) and not lines
else:
    ok = r.get("verdict") == "leak" and bool(kept) and want in kept[0] and any(want in l for l in lines)
print(("PASS" if ok else "FAIL") + " %s: verdict %s, kept by %r; walks: %s" % (mode, r.get("verdict"), kept[:1], took))
sys.exit(0 if ok else 1)
PY
  [[ $? -eq 0 ]] || fail=1
done
exit $fail
