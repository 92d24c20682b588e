#!/usr/bin/env bash
# Builds the Debian package: gpuleak_<version>_amd64.deb in <build dir> (default build-deb), with
# FHS paths (docs/install.md): /usr/bin/gpuleak, /usr/lib/gpuleak/libgpuleak.so,
# /usr/share/gpuleak/viewer.html, /usr/lib/python3/dist-packages/gpuleak, the C API header and
# gpuleak.pc. The CLI links elfutils and the C++ runtime statically, so Depends is libc6 alone.
# CMAKE_ARGS adds configure arguments (e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-deb}
cuda_root=${GPULEAK_CUDA_ROOT:-/usr/local/cuda}
# Linked against Debian 11's glibc, as the wheel is (scripts/glibc-sysroot.sh, docs/install.md), so
# that Depends asks for an older libc6; GPULEAK_SYSROOT=none links against this machine's.
sysroot=${GPULEAK_SYSROOT:-}
if [ -z "$sysroot" ]; then
  sysroot=$(scripts/glibc-sysroot.sh) || { echo "gpuleak deb: no glibc sysroot: linking against this machine's glibc"; sysroot=none; }
fi
toolchain=()
[ "$sysroot" = none ] || toolchain=(-DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/GpuleakSysrootToolchain.cmake" -DGPULEAK_SYSROOT="$sysroot")
# A tree configured for another sysroot cannot switch compilers in place (setup.py does the same).
if [ -f "$build/CMakeCache.txt" ]; then
  configured=$(sed -n 's/^GPULEAK_SYSROOT:[A-Z]*=//p' "$build/CMakeCache.txt")
  [ "$configured" = "${sysroot/#none/}" ] || rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
# shellcheck disable=SC2086  # CMAKE_ARGS is a list of arguments
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPULEAK_CUDA_ROOT="$cuda_root" "${toolchain[@]}" \
  -DGPULEAK_BUILD_TESTS=OFF -DGPULEAK_BUILD_BENCH=OFF -DGPULEAK_PORTABLE_CLI=ON \
  -DCMAKE_INSTALL_PREFIX=/usr -DGPULEAK_INSTALL_SHIMDIR=lib/gpuleak \
  -DGPULEAK_INSTALL_PYTHONDIR=lib/python3/dist-packages ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
(cd "$build" && cpack -G DEB >/dev/null)
ls "$build"/gpuleak_*_amd64.deb
