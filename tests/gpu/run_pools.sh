#!/usr/bin/env bash
# Issue 27's JAX cases beyond the framework loops, on a real GPU, under `gpuleak run`:
#   jax-oom-caught   the default arena (XLA_PYTHON_CLIENT_MEM_FRACTION=0.03 so it fills fast) runs out
#                    inside XLA; the program catches RESOURCE_EXHAUSTED. The report must have an OOM
#                    event with api jax.JaxRuntimeError, a `pool` object (the arena's figures) and the
#                    kept arrays' line (`# @keep-oom`) in live_by_site; devices[0].forecast is for the
#                    arena filling (fills jax_arena), its iterations_left within one of the arena's free
#                    bytes at the last step (memory_stats) over the rate.
#   jax-per-buffer   `--jax per-buffer`: XLA_PYTHON_CLIENT_ALLOCATOR=address where the installed JAX
#                    has it (platform before JAX 0.10), and a buffer deleted each step is freed: verdict
#                    clean, nothing of its line live at exit, nothing said; on a JAX with neither (0.11.2
#                    without `address`: its platform allocator keeps deleted buffers, jax-ml/jax#39145)
#                    exactly one "--jax per-buffer: ..." line, the arena kept and sampled, verdict clean.
#
#   tests/gpu/run_pools.sh BUILD_DIR [OUT_DIR]
# Prints PASS/FAIL/SKIP per case; exit 1 on a FAIL, 77 when nothing ran, else 0.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 BUILD_DIR [OUT_DIR]" >&2; exit 2; }
skip_without_gpu
build_dir=$(cd "$1" && pwd) || exit 2
gpuleak=$build_dir/bin/gpuleak
out_dir=${2:-${OUT:+$OUT/pools}}
out_dir=${out_dir:-$build_dir/gpu-pools}
mkdir -p "$out_dir" && out_dir=$(cd "$out_dir" && pwd)
python=${PYTHON:-python3}
GPULEAK_PYTHONDIR=$(cd "$here/../../tools/python" && pwd) || exit 2
export GPULEAK_PYTHONDIR PYTHONPATH=$GPULEAK_PYTHONDIR${PYTHONPATH:+:$PYTHONPATH}
use_hostlibs "$gpuleak" "$build_dir/gpu-tests/hostlibs"
pass=0 fail=0 skip=0

run_case() {  # name mode env... -- gpuleak-run-options...
  local name=$1 mode=$2
  shift 2
  local envs=() opts=()
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift && opts=("$@")
  local dir=$out_dir/$name
  rm -rf "$dir" && mkdir -p "$dir/captures"
  (cd "$dir" && env -u XLA_PYTHON_CLIENT_ALLOCATOR -u XLA_PYTHON_CLIENT_PREALLOCATE -u GPULEAK_JAX "${envs[@]}" \
    timeout -k 10 300 "$gpuleak" run --out "$dir/captures" "${opts[@]}" -- "$python" "$here/jax_pools.py" "$mode" \
    --result "$dir/result.json" >"$dir/stdout" 2>"$dir/stderr")
  local status=$? detail verdict
  if [[ $status -ne 0 ]]; then
    verdict=FAIL detail="exited with $status (see $dir/stderr)"
  else
    detail=$("$python" - "$dir" "$mode" <<'EOF'
import glob, json, os, sys
d, mode = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(d, "result.json")))
if "skipped" in m:
    print("skipped: " + m["skipped"]); sys.exit(77)
reports = glob.glob(os.path.join(d, "captures", "*.report.json"))
if len(reports) != 1:
    print("expected one report, found %d" % len(reports)); sys.exit(1)
r = json.load(open(reports[0]))
want = "%s:%d" % (os.path.basename(m["file"]), m["line"])
def lines(entry):
    return {"%s:%s" % (os.path.basename(f.get("file") or ""), f.get("line"))
            for f in entry.get("stack", []) if f.get("kind") == "python"}
if mode == "oom":
    events = (r.get("oom") or {}).get("events") or []
    if not m.get("caught") or "RESOURCE_EXHAUSTED" not in m["caught"]:
        print("the program caught no RESOURCE_EXHAUSTED: %r" % m.get("caught")); sys.exit(1)
    if not events:
        print("no OOM event in the report (caught %r)" % m["caught"][:120]); sys.exit(1)
    e = events[0]
    live = [s for s in e.get("live_by_site", []) if want in lines(s)]
    ok = e.get("api") == "jax.JaxRuntimeError" and e.get("pool") and live
    print("api %s, requested %s, pool %s, %s live at %s (%d arrays kept)" % (e.get("api"), e.get("requested_bytes"),
          e.get("pool"), live[0]["bytes"] if live else 0, want, m.get("kept", 0)))
    # The forecast is for the arena filling (report 1.3): at the last complete step the arena's free
    # bytes (memory_stats: limit less in use) over the rate, give or take one step (the iteration
    # the report ends last may be the one before, and the arena's own rounding).
    f = (r.get("devices") or [{}])[0].get("forecast") or {}
    steps = m.get("steps") or []
    free = steps[-1][0] - steps[-1][1] if steps else -1
    rate = f.get("bytes_per_iteration") or 0
    expect = free // rate if rate > 0 and free >= 0 else None
    print("forecast %s; arena at the last step: limit %d, in use %d, free %d: %s iterations" % (
        json.dumps(f, sort_keys=True), steps[-1][0] if steps else 0, steps[-1][1] if steps else 0, free, expect))
    ok = ok and f.get("fills") == "jax_arena" and expect is not None and abs(f.get("iterations_left", -9) - expect) <= 1
    sys.exit(0 if ok else 1)
# The deleted arrays' buffers must be gone. XLA's own state made while compiling the line's first
# call (cuDNN handles, tens of KiB under the line, "via backend_compile_and_load") stays: only a
# site holding at least one array's bytes counts.
left = [s for s in r.get("live_at_exit", []) if want in lines(s) and s.get("live_bytes", 0) >= m.get("array_bytes", 1 << 26)]
said = [l.strip() for l in open(os.path.join(d, "stderr"), errors="replace") if l.startswith("gpuleak: --jax per-buffer:")]
if m["allocator"] in ("address", "platform"):
    # The allocator gpuleak chose must free: nothing of the deleted line live at exit, no line said.
    ok = r.get("verdict") == "clean" and not left and not said
else:
    # Neither a pass-through nor a platform allocator that frees: one line, the arena kept (and sampled).
    ok = r.get("verdict") == "clean" and len(said) == 1 and "keeps its arena" in said[0] and \
        (r["run"].get("allocator_mode") or "").startswith("per-array (JAX's arena")
print("allocator %r, verdict %s, allocator_mode %r, %d sites of %s live at exit; said %r" % (m["allocator"],
      r.get("verdict"), r["run"].get("allocator_mode"), len(left), want, said[0] if said else None))
sys.exit(0 if ok else 1)
EOF
)
    case $? in 0) verdict=PASS ;; 77) verdict=SKIP ;; *) verdict=FAIL ;; esac
  fi
  echo "$verdict $name: $detail" | tee -a "$out_dir/pools.log"
  case $verdict in PASS) pass=$((pass + 1)) ;; SKIP) skip=$((skip + 1)) ;; *) fail=$((fail + 1)) ;; esac
}

: >"$out_dir/pools.log"
run_case jax-oom-caught oom XLA_PYTHON_CLIENT_MEM_FRACTION=0.03 --
run_case jax-per-buffer per-buffer -- --jax per-buffer
echo "run_pools: $pass PASS, $fail FAIL, $skip SKIP; log $out_dir/pools.log"
[[ $fail -gt 0 ]] && exit 1
[[ $pass -eq 0 ]] && exit 77
exit 0
