#!/usr/bin/env bash
# packaging.deb: builds the Debian package with scripts/build-deb.sh, checks its metadata and its
# files (dpkg-deb), unpacks it into a temporary root (dpkg -x) and runs what it installed there:
# the CLI on the leaky sample (fake CUDA), the Python package's locator, the header through
# gpuleak.pc, and the C API from a program compiled against it.
#   deb_test.sh <source dir> <build dir with fake_cuda/ and programs/>
set -euo pipefail
src=$1
build=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in dpkg-deb dpkg-shlibdeps cpack pkg-config; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: no $tool (scripts/install-deps.sh)"; exit 77; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/gpuleak-deb-XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== scripts/build-deb.sh"
tree=${GPULEAK_CMAKE_BUILD_DIR:-$work/build}
"$src/scripts/build-deb.sh" "$tree" >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log"; fail "build-deb.sh"; }
version=$(sed -n 's/^project(gpuleak VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
deb=$tree/gpuleak_${version}_amd64.deb
[ -f "$deb" ] || fail "no $deb"

echo "== dpkg-deb -I"
dpkg-deb -f "$deb" Package Version Architecture Depends Recommends
[ "$(dpkg-deb -f "$deb" Package)" = gpuleak ] || fail "Package"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "Version"
# The portable CLI and the shim need glibc alone.
[[ $(dpkg-deb -f "$deb" Depends) =~ ^libc6\ \(\>=\ 2\.[0-9]+\)$ ]] || fail "Depends: $(dpkg-deb -f "$deb" Depends)"

echo "== dpkg-deb -c"
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/files"
for f in ./usr/bin/gpuleak ./usr/lib/gpuleak/libgpuleak.so ./usr/share/gpuleak/viewer.html \
  ./usr/lib/python3/dist-packages/gpuleak/__init__.py ./usr/lib/python3/dist-packages/gpuleak/pytest_plugin.py \
  ./usr/lib/python3/dist-packages/gpuleak/_layout.py ./usr/lib/python3/dist-packages/gpuleak/_startup/sitecustomize.py ./usr/include/gpuleak/gpuleak.h \
  ./usr/share/pkgconfig/gpuleak.pc ./usr/lib/cmake/gpuleak/gpuleakConfig.cmake ./usr/share/doc/gpuleak/copyright; do
  grep -qx "$f" "$work/files" || fail "$f is not in the package"
done
! grep -q "__pycache__\|\.pyc$" "$work/files" || fail "compiled Python in the package"
echo "$(wc -l <"$work/files") entries, the key files present"

echo "== dpkg -x, then run what it installed"
dpkg -x "$deb" "$work/root"
usr=$work/root/usr
"$usr/bin/gpuleak" --version | grep -qx "$version" || fail "gpuleak --version"
export LD_LIBRARY_PATH="$build/fake_cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset GPULEAK_LIB GPULEAK_CLI
(cd "$work" && "$usr/bin/gpuleak" run --out "$work/out" "$build/programs/prog_leaky_static" 30) 2>"$work/run.err" ||
  { cat "$work/run.err"; fail "gpuleak run"; }
grep -q "leak: 1.0 MiB per iteration at leaky_loop.cpp:17 in cache_activation" "$work/run.err" || { cat "$work/run.err"; fail "no leak found"; }
"$usr/bin/gpuleak" view --quiet -o "$work/view.html" "$(ls "$work"/out/*.report.json)" || fail "gpuleak view"
PYTHONPATH=$usr/lib/python3/dist-packages python3 -c "
import gpuleak._locate as l
shim = l.find_shim(); cli = l.find_cli(shim)
assert shim == '$usr/lib/gpuleak/libgpuleak.so', shim
assert cli == '$usr/bin/gpuleak', cli
"
cflags=$(PKG_CONFIG_PATH=$usr/share/pkgconfig pkg-config --define-variable=prefix="$usr" --cflags gpuleak)
cflags=${cflags% }  # pkg-config ends the line with a space
[ "$cflags" = "-I$usr/include" ] || fail "pkg-config --cflags gpuleak: $cflags"
printf '#include <gpuleak/gpuleak.h>\nint main(void) { gpuleak_iteration_begin("t"); gpuleak_iteration_end(); return gpuleak_active(); }\n' \
  >"$work/api.c"
# shellcheck disable=SC2086  # cflags is a list of flags
cc $cflags -o "$work/api" "$work/api.c" -ldl || fail "the C API does not compile with gpuleak.pc's flags"
"$work/api" || fail "the C API program (no shim: inactive, exit 0)"
echo "PASS"
