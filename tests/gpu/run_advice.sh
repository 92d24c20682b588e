#!/usr/bin/env bash
# The loop advice on a real GPU (docs/advice.md, docs/conformance.md "Loop advice"): runs each loop
# of advice_loops.cu and torch_advice.py under `gpuleak run`, before and after following the
# advice, and checks that the advice is given for the first and not for the second.
#
#   tests/gpu/run_advice.sh BUILD_DIR OUT_DIR
#
# BUILD_DIR holds bin/gpuleak, lib/libgpuleak.so and gpu-tests/gpu_advice_loops (tests/gpu/build.sh).
# OUT_DIR receives, per case, <case>/ (capture, report, stdout with the TIMING line, stderr with
# the summary) and advice.md: one row per case with the advice kinds found, the saving each
# finding estimates, and the loop's own wall time per iteration.
# Exit status: 0 when every case ran as expected, 1 when one did not, 77 without a GPU or without
# the test program, 2 on usage.
# Environment: PYTHON (python3), ADVICE_CASES='regex' runs only the matching cases.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"
if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
skip_without_gpu
build_dir=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" || exit 2
out_dir=$(cd "$2" && pwd)
gpuleak=$build_dir/bin/gpuleak
prog=$build_dir/gpu-tests/gpu_advice_loops
python=${PYTHON:-python3}
filter=${ADVICE_CASES:-}
if [[ ! -x $prog ]]; then
  echo "SKIPPED: $prog missing; build it with tests/gpu/build.sh $build_dir"
  exit 77
fi
if [[ ! -x $gpuleak ]]; then
  echo "run_advice: $gpuleak missing: build gpuleak first" >&2
  exit 1
fi
use_hostlibs "$gpuleak" "$build_dir/gpu-tests/hostlibs"

md=$out_dir/advice.md
{
  echo "| case | expected | found | advice kinds | estimated saving | wall per iteration | device peak |"
  echo "|---|---|---|---|---|---|---|"
} >"$md"
failed=0

# case NAME EXPECT(kind|none|!kind|kind@FILE:LINE) [gpuleak run options...] -- COMMAND...
case_() {
  local name=$1 expect=$2
  shift 2
  [[ -n $filter && ! $name =~ $filter ]] && return 0
  local opts=()
  while [[ $1 != -- ]]; do
    opts+=("$1")
    shift
  done
  shift
  local dir=$out_dir/$name
  rm -rf "$dir"
  mkdir -p "$dir"
  local start=$SECONDS
  timeout 60 "$gpuleak" run --out "$dir" "${opts[@]}" -- "$@" >"$dir/stdout" 2>"$dir/stderr"
  local rc=$?
  local verdict
  verdict=$("$python" - "$dir" "$expect" "$rc" <<'PY'
import glob, json, re, sys
d, expect, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = open(d + "/stdout").read()
if "SKIPPED" in out:
    print("SKIP|-|-|-|-|" + out.strip().splitlines()[-1]); sys.exit()
reports = glob.glob(d + "/*.report.json")
if rc != 0 or len(reports) != 1:
    print("FAIL|-|-|-|-|exit %d, %d report(s)" % (rc, len(reports))); sys.exit()
r = json.load(open(reports[0]))
kinds = [a["kind"] for a in r["advice"]]
saving = "; ".join("%s: %s" % (a["kind"], ", ".join("%s=%s" % kv for kv in a["saving"].items())) for a in r["advice"])
m = re.search(r"per_iteration_us=([0-9.]+)", out)
wall = (m.group(1) + " us") if m else "?"
if "@" in expect:  # KIND@FILE:LINE: that kind, leading with the user's line to change (change_at)
    kind, line = expect.split("@", 1)
    ok = any(a["kind"] == kind and (a.get("change_at") or {}).get("text") == line for a in r["advice"])
elif expect == "none":
    ok = not kinds
elif expect.startswith("!"):
    ok = expect[1:] not in kinds
else:
    ok = expect in kinds
peak = max([d["peak_live_bytes"] for d in r["devices"]] or [0]) / 2**20
print("%s|%s|%s|%s|%.1f MiB|%s" % ("PASS" if ok else "FAIL", ", ".join(kinds) or "none", saving or "-", wall, peak,
                                  r["iteration_source"]))
PY
)
  local status=${verdict%%|*}
  local rest=${verdict#*|}
  IFS='|' read -r kinds saving wall peak source <<<"$rest"
  printf '%-28s %s  (%ss) advice: %s; wall/iteration: %s; peak: %s; %s\n' "$name" "$status" $((SECONDS - start)) \
    "$kinds" "$wall" "$peak" "$source"
  echo "| $name | $expect | $status | $kinds | $saving | $wall | $peak |" >>"$md"
  [[ $status == FAIL ]] && failed=1
  return 0
}

for mode in churn thrash late; do
  expect=$mode
  [[ $mode == thrash ]] && expect=cache_thrash
  [[ $mode == late ]] && expect=late_release
  case_ "cuda-$mode" "$expect" -- "$prog" "$mode" 200
  case_ "cuda-$mode-fixed" "!$expect" -- "$prog" "$mode-fixed" 200
done
case_ cuda-clean none -- "$prog" clean 200
# Reserved far above live (fragmentation without a failure): NVML sampled every 250 ms (the default).
case_ cuda-pool-reserve fragmentation -- "$prog" pool-reserve 300
case_ cuda-pool-reserve-fixed '!fragmentation' -- "$prog" pool-reserve-fixed 300

if "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  # The finding names the empty_cache() line itself (issue #28: gpuleak._hooks marks its caller).
  empty_line=$(grep -n '^ *torch.cuda.empty_cache()$' "$here/torch_advice.py" | head -n 1 | cut -d: -f1)
  case_ torch-empty_cache "cache_thrash@torch_advice.py:$empty_line" -- "$python" "$here/torch_advice.py" empty_cache 30
  case_ torch-empty_cache-fixed '!cache_thrash' -- "$python" "$here/torch_advice.py" empty_cache-fixed 30
  case_ torch-late late_release --torch per-tensor -- "$python" "$here/torch_advice.py" late 30
  case_ torch-late-fixed none --torch per-tensor -- "$python" "$here/torch_advice.py" late-fixed 30
else
  echo "torch cases SKIPPED: torch not installed or no CUDA device" | tee -a "$md"
fi
echo "run_advice: table in $md"
exit $failed
