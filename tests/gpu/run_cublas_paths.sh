#!/usr/bin/env bash
# Issue #28 item 2 on a real GPU: two leaks through cublasCreate from two call paths get two
# site ids, each headed by the user's function (make_a, make_b), not one id for both.
#
#   tests/gpu/run_cublas_paths.sh BUILD_DIR OUT_DIR
#
# BUILD_DIR holds bin/gpuleak, lib/libgpuleak.so and gpu-tests/gpu_cublas_paths (tests/gpu/build.sh).
# Exit status: 0 PASS, 1 FAIL, 77 without a GPU or the program, 2 on usage.
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
out=$(cd "$2" && pwd)
prog=$build_dir/gpu-tests/gpu_cublas_paths
if [[ ! -x $prog ]]; then
  echo "SKIPPED: $prog missing; build it with tests/gpu/build.sh $build_dir"
  exit 77
fi
use_hostlibs "$build_dir/bin/gpuleak" "$build_dir/gpu-tests/hostlibs"
rm -rf "$out/run"
"$build_dir/bin/gpuleak" run --out "$out/run" -- "$prog" 30 >"$out/stdout" 2>"$out/stderr"
rc=$?
python3 - "$out/run" "$rc" <<'PY'
import glob, json, sys
d, rc = sys.argv[1], int(sys.argv[2])
reports = glob.glob(d + "/*.report.json")
if rc != 0 or len(reports) != 1:
    print("cublas_paths FAIL: exit %d, %d report(s)" % (rc, len(reports))); sys.exit(1)
r = json.load(open(reports[0]))
heads = {}
for leak in r["leaks"]:
    h = (leak.get("headline") or {}).get("function") or "?"
    heads.setdefault(h, set()).add(leak["site_id"])
ids = [l["site_id"] for l in r["leaks"]]
print("leaks:", ["%s %s %.2f MiB/it" % (l["site_id"], (l.get("headline") or {}).get("text"), l["bytes_per_iteration"] / 2**20)
                 for l in r["leaks"]])
ok = "make_a" in heads and "make_b" in heads and not (heads["make_a"] & heads["make_b"]) and len(set(ids)) == len(ids)
print("cublas_paths", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
