#!/usr/bin/env bash
# Instructions the program's thread runs per stack-less allocation pair under the shim, on the fake
# CUDA (docs/benchmarks.md run 13's method): callgrind --separate-threads=yes of
# `alloc_pair_bench N 1 256` at N = 2,000 and 12,000, the main thread's total instructions, their
# difference / 10,000 (start-up and exit cancel out). Plain (no shim) is measured the same way and
# subtracted. Usage: bench/callgrind_pair.sh BUILD_DIR [LIB]  (LIB defaults to BUILD_DIR/lib/libgpuleak.so)
set -euo pipefail
build=${1:?build dir}
lib=${2:-$build/lib/libgpuleak.so}
[ -x "$build/bench/alloc_pair_bench" ] || { echo "callgrind_pair: $build/bench/alloc_pair_bench not built" >&2; exit 2; }
[ -f "$lib" ] || { echo "callgrind_pair: $lib not found" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "callgrind_pair: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
bench=$(realpath "$build/bench/alloc_pair_bench")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
main_ir() {  # N, preload ('' for plain): the program thread's instructions
  local n=$1 preload=$2 out=$work/cg.$1.${3}
  (cd "$work" && env FAKE_CUDA_REUSE=1 GPULEAK_STACK_DEPTH=0 GPULEAK_QUIET=1 GPULEAK_REPORT_TIMEOUT=0 \
     GPULEAK_OUT="$work/out" ${preload:+LD_PRELOAD=$preload} \
     valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out" "$bench" "$n" 1 256 \
     >/dev/null 2>&1)
  # Thread 1 is the program's main thread.
  local f=$out-01
  [ -f "$f" ] || f=$out
  awk '/^(summary|totals):/ {print $2; exit}' "$f"
}
per_pair() {
  local a b
  a=$(main_ir 2000 "$1" "$2")
  b=$(main_ir 12000 "$1" "$2")
  echo $(((b - a) / 10000))
}
plain=$(per_pair "" plain)
shim=$(per_pair "$(realpath "$lib")" shim)
echo "program thread, instructions per pair: plain $plain, under the shim $shim, added $((shim - plain))"
