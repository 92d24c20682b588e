#!/usr/bin/env bash
# Builds two cut-down shims that show the floor under the hook's cost (docs/benchmarks.md, "the
# floor"): floor_none interposes every entry point and records nothing (the trampolines, the
# re-entry guard, the capture-status check); floor_clock also reads the capture clock at both ends
# of every call, as the real hook does for each record's time and duration. The cut is
# bench/floor.patch, applied to a copy of this tree (the shim itself is never built this way).
# usage: bench/floor_shims.sh OUT_DIR   -> OUT_DIR/floor_none/libgpuleak.so, OUT_DIR/floor_clock/...
# Time them with bench/run_overhead.sh: EXTRA_SHIMS="floor_none=OUT_DIR/floor_none/libgpuleak.so ...".
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$src" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar cf -) | (cd "$tmp" && tar xf -)
patch -s -d "$tmp" -p1 <"$src/bench/floor.patch"
for variant in clock:1 none:2; do
  name=floor_${variant%%:*}
  cmake -S "$tmp" -B "$tmp/build-$name" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPULEAK_BUILD_TESTS=OFF \
    -DGPULEAK_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS="-DGPULEAK_FLOOR=${variant#*:}" >/dev/null
  cmake --build "$tmp/build-$name" -j"$(nproc)" --target gpuleak >/dev/null
  mkdir -p "$out/$name"
  cp "$tmp/build-$name/lib/libgpuleak.so" "$out/$name/"
  strip --strip-debug "$out/$name/libgpuleak.so"
  # The shim finds its bundled libraries beside itself ($ORIGIN), as in the carry folder.
  for lib in "$src"/build/lib/lib{dw,elf,unwind}.so*; do [ -e "$lib" ] && cp -a "$lib" "$out/$name/"; done
done
echo "floor shims in $out: floor_none floor_clock"
