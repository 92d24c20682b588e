#!/usr/bin/env bash
# packaging.wheel: builds the wheel as a user would (pip wheel at the repository root, Debian's
# setuptools and wheel, no network), installs it into a fresh venv, and runs the leaky sample on
# the fake CUDA with the venv's `gpuleak` and with `python -m gpuleak`: no build tree, no GPULEAK_LIB,
# the shim, the CLI and the viewer template all from the wheel.
#   wheel_test.sh <source dir> <build dir with fake_cuda/ and programs/>
set -euo pipefail
src=$1
build=$2
py=${GPULEAK_WHEEL_PYTHON:-/usr/bin/python3}  # Debian's: it has setuptools, wheel and venv
fail() { echo "FAIL: $*" >&2; exit 1; }
for mod in setuptools wheel venv ensurepip; do
  "$py" -c "import $mod" 2>/dev/null || { echo "SKIPPED: $py has no $mod (scripts/install-deps.sh)"; exit 77; }
done
command -v patchelf >/dev/null || { echo "SKIPPED: no patchelf (scripts/install-deps.sh)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpuleak-wheel-XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== pip wheel"
(cd "$src" && "$py" -m pip wheel -v --no-build-isolation --no-deps --no-index -w "$work/dist" .) >"$work/pip.log" 2>&1 ||
  { tail -n 40 "$work/pip.log"; fail "pip wheel failed"; }
grep "binaries need glibc" "$work/pip.log" || true
wheels=("$work"/dist/gpuleak-*.whl)
[ ${#wheels[@]} -eq 1 ] && [ -f "${wheels[0]}" ] || fail "expected one gpuleak wheel in $work/dist"
wheel=${wheels[0]}
name=$(basename "$wheel")
version=$(sed -n 's/^project(gpuleak VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[[ $name =~ ^gpuleak-${version//./\\.}-py3-none-manylinux_2_([0-9]+)_x86_64\.whl$ ]] || fail "wheel name $name"
# Linked against Debian 11's glibc with src/compat's pins (docs/install.md): it installs where GPU
# users are, RHEL 8 and Ubuntu 20.04 included (issue #31).
tag_minor=${BASH_REMATCH[1]}
[ "$tag_minor" -le 28 ] || fail "$name is newer than manylinux_2_28 (see the \"binaries need glibc\" line above)"
echo "$name"

echo "== symbol versions of every ELF file in the wheel, against its tag (2.$tag_minor)"
allowed=()
for lib in libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 ld-linux-x86-64.so.2 libunwind.so.8 liblzma.so.5; do
  allowed+=(--allow-needed "$lib")
done
"$py" "$src/scripts/elf_versions.py" --max-glibc "2.$tag_minor" "${allowed[@]}" "$wheel" || fail "symbol versions"

echo "== contents"
"$py" - "$wheel" <<'PY'
import stat, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
need = ["gpuleak/__init__.py", "gpuleak/__main__.py", "gpuleak/pytest_plugin.py", "gpuleak/report.py",
        "gpuleak/_native/bin/gpuleak", "gpuleak/_native/lib/libgpuleak.so",
        "gpuleak/_native/lib/libunwind.so.8", "gpuleak/_native/share/gpuleak/viewer.html",
        "gpuleak/_native/share/gpuleak/torch_adapter/trace_tracker.cpp",
        "gpuleak/_hooks.py", "gpuleak/_startup/sitecustomize.py"]
missing = [n for n in need if n not in names]
assert not missing, "missing from the wheel: %s" % missing
assert (z.getinfo("gpuleak/_native/bin/gpuleak").external_attr >> 16) & stat.S_IXUSR, "CLI not executable"
meta = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
ep = z.read(meta[0]).decode()
assert "[pytest11]" in ep and "gpuleak.pytest_plugin" in ep, ep
assert "gpuleak = gpuleak.__main__:main" in ep, ep
assert any(n.endswith(".dist-info/LICENSE") for n in names), "no LICENSE in the wheel"
print("%d files, entry points: console gpuleak, pytest11 gpuleak.pytest_plugin" % len(names))
PY

echo "== fresh venv"
"$py" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --no-deps --no-index -q "$wheel"
site=$("$work/venv/bin/python" -c 'import gpuleak, os; print(os.path.dirname(gpuleak.__file__))')
[[ $site == "$work/venv/"* ]] || fail "gpuleak imported from $site, not the venv"
native=$site/_native
# Nothing beyond glibc and the bundled files (ldd resolves through RUNPATH $ORIGIN).
for f in "$native/bin/gpuleak" "$native"/lib/*.so*; do
  ldd "$f" | awk '{print $1, $3}' | while read -r lib where; do
    case $lib in linux-vdso.so.1|libc.so.6|libm.so.6|libdl.so.2|libpthread.so.0|librt.so.1|/lib64/ld-linux-x86-64.so.2) ;;
      *) [[ $where == "$native/lib/"* ]] || fail "$(basename "$f") needs $lib from $where" ;;
    esac
  done
done
"$work/venv/bin/gpuleak" --version | grep -qx "$version" || fail "gpuleak --version"
"$work/venv/bin/python" -m gpuleak --version | grep -qx "$version" || fail "python -m gpuleak --version"
"$work/venv/bin/python" -c "
import importlib.metadata as m, gpuleak._locate as l
eps = [e.value for e in m.entry_points(group='pytest11')]
assert 'gpuleak.pytest_plugin' in eps, eps
shim = l.find_shim(); cli = l.find_cli(shim)
assert shim.startswith('$native/'), shim
assert cli.startswith('$native/'), cli
"

echo "== the demo on the fake CUDA, from the venv"
export LD_LIBRARY_PATH="$build/fake_cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset GPULEAK_LIB GPULEAK_CLI
check_report() {  # <out dir>: one report, verdict leak at cache_activation
  "$py" - "$1" <<'PY'
import glob, json, sys
reports = glob.glob(sys.argv[1] + "/*.report.json")
assert len(reports) == 1, reports
r = json.load(open(reports[0]))
assert r["verdict"] == "leak", r["verdict"]
assert r["leaks"][0]["stack"][0]["function"] == "cache_activation", r["leaks"][0]["stack"][:2]
print("verdict leak, %.1f MiB per iteration at cache_activation" % (r["leaks"][0]["bytes_per_iteration"] / 2**20))
PY
}
# No `--`: the first word is the command, and its own options stay its own (--quiet is the
# program's 2nd argument here, not gpuleak's: the summary must still be printed).
(cd "$work" && "$work/venv/bin/gpuleak" run --out "$work/out1" "$build/programs/prog_leaky_static" 30 --quiet) \
  2>"$work/run1.err" || { cat "$work/run1.err"; fail "venv gpuleak run"; }
grep -q "leak:" "$work/run1.err" || { cat "$work/run1.err"; fail "no summary: --quiet was taken as gpuleak's"; }
check_report "$work/out1"
(cd "$work" && "$work/venv/bin/python" -m gpuleak run --quiet --out "$work/out2" -- "$build/programs/prog_leaky_static" 30) ||
  fail "python -m gpuleak run"
check_report "$work/out2"
report=$(ls "$work"/out2/*.report.json)
"$work/venv/bin/gpuleak" view --quiet -o "$work/view.html" "$report" || fail "gpuleak view with the bundled template"
grep -q "<html" "$work/view.html" || fail "view.html is not HTML"
echo "PASS"
