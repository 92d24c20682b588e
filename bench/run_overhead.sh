#!/usr/bin/env bash
# Added cost per cudaMallocAsync+cudaFreeAsync pair: the same binary without the shim, with it and
# no stacks, with it at the default stack depth, and (GPU only) with CUPTI callbacks too. Runs the
# configurations alternately, ROUNDS times, and prints every median so the spread is visible.
# nomemo is stack32 with the stack memo off (GPULEAK_STACK_MEMO=0): every stack unwound in full.
# usage: bench/run_overhead.sh BUILD_DIR [BINARY]   (BINARY defaults to the fake-CUDA build)
# REF_SHIM=/path/libgpuleak.so adds ref_nostack and ref_stack32: another build of the shim in the
# same rounds, for an A/B comparison on one machine (the GPU host's speed varies between machines).
# EXTRA_SHIMS="name=/path/libgpuleak.so ..." adds one no-stack configuration per named build (the
# floor interposer: floor=BUILD/bench/libgpuleak_floor.so, bench/floor_shim.cpp).
# PIN="taskset -c 2,3" runs every configuration on the same two CPUs (the program and gpuleak's
# writer thread each get one). No at-exit report is run (GPULEAK_REPORT_TIMEOUT=0): it is not part
# of the cost measured, and on a 600,000-event capture it takes longer than the measurement.
set -euo pipefail
build=$(cd "$1" && pwd)
bin=${2:-$build/bench/alloc_pair_bench}
shim=$build/lib/libgpuleak.so
rounds=${ROUNDS:-5}
out=$(mktemp -d)
bytes=${BYTES:-1048576}  # the fake CUDA mallocs for real: BYTES=256 keeps its own cost small
pin=${PIN:-}
run() { $pin env GPULEAK_REPORT_TIMEOUT=0 "$@" "$bin" "${PAIRS:-20000}" "${REPS:-15}" "$bytes" | sed -n 's/.*median=\([0-9.]*\).*/\1/p'; }
declare -A results
configs=(plain nostack stack32 nomemo)
[ "${WITH_CUPTI:-0}" = 1 ] && configs+=(cupti)
ref=${REF_SHIM:-}
[ -n "$ref" ] && configs+=(ref_nostack ref_stack32)
declare -A extra
for e in ${EXTRA_SHIMS:-}; do
  extra[${e%%=*}]=${e#*=}
  configs+=("${e%%=*}")
done
for ((r = 0; r < rounds; r++)); do
  for c in "${configs[@]}"; do
    case $c in
      plain) v=$(run GPULEAK_OUT="$out") ;;
      nostack) v=$(run LD_PRELOAD="$shim" GPULEAK_OUT="$out" GPULEAK_QUIET=1 GPULEAK_STACK_DEPTH=0) ;;
      stack32) v=$(run LD_PRELOAD="$shim" GPULEAK_OUT="$out" GPULEAK_QUIET=1) ;;
      nomemo) v=$(run LD_PRELOAD="$shim" GPULEAK_OUT="$out" GPULEAK_QUIET=1 GPULEAK_STACK_MEMO=0) ;;
      cupti) v=$(run LD_PRELOAD="$shim" GPULEAK_OUT="$out" GPULEAK_QUIET=1 GPULEAK_CUPTI=1) ;;
      ref_nostack) v=$(run LD_PRELOAD="$ref" GPULEAK_OUT="$out" GPULEAK_QUIET=1 GPULEAK_STACK_DEPTH=0) ;;
      ref_stack32) v=$(run LD_PRELOAD="$ref" GPULEAK_OUT="$out" GPULEAK_QUIET=1) ;;
      *) v=$(run LD_PRELOAD="${extra[$c]}" GPULEAK_OUT="$out" GPULEAK_QUIET=1 GPULEAK_STACK_DEPTH=0) ;;
    esac
    results[$c]+="$v "
    rm -f "$out"/*
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${results[plain]}" | median)
lowest() { tr ' ' '\n' | grep -v '^$' | sort -n | head -n 1; }
low_base=$(echo "${results[plain]}" | lowest)
# The lowest of the medians too: a machine whose pair cost is bimodal between runs (the H200 host's
# is) mixes modes into the median; the lowest median is each configuration's fast mode.
printf '%-10s %-12s %-10s %-12s %-10s %s\n' config median_ns added_ns lowest_ns added_low "all medians (ns/pair)"
for c in "${configs[@]}"; do
  m=$(echo "${results[$c]}" | median)
  l=$(echo "${results[$c]}" | lowest)
  printf '%-10s %-12s %-10s %-12s %-10s %s\n' "$c" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN{printf "%.1f", a-b}')" \
    "$l" "$(awk -v a="$l" -v b="$low_base" 'BEGIN{printf "%.1f", a-b}')" "${results[$c]}"
done
rm -rf "$out"
