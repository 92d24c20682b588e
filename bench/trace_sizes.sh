#!/usr/bin/env bash
# Trace sizes: the JSON timeline against the Perfetto protobuf, raw and gzip -6, default bounds and
# --full, for a few captures. Without CAPTURE arguments it makes three: prog_leaky_static under the
# shim on the fake CUDA, and bench/gen_capture's synthetic training runs of 100,000 and 1,000,000
# events. Sizes only, no timing; not run by CI (docs/benchmarks.md has the method and the numbers).
# usage: bench/trace_sizes.sh BUILD_DIR [CAPTURE...]
set -euo pipefail
build=$(cd "$1" && pwd)
shift
dir=${BENCH_DIR:-/tmp/gpuleak-trace-sizes}
mkdir -p "$dir"
captures=("$@")
if [[ ${#captures[@]} -eq 0 ]]; then
  rm -rf "$dir/leaky" && mkdir -p "$dir/leaky"
  LD_LIBRARY_PATH="$build/fake_cuda" LD_PRELOAD="$build/lib/libgpuleak.so" GPULEAK_OUT="$dir/leaky" \
    GPULEAK_REPORT_TIMEOUT=0 "$build/programs/prog_leaky_static" >/dev/null 2>&1
  captures+=("$dir"/leaky/*.gpuleak)
  for events in 100000 1000000; do
    capture=$dir/synthetic.$events.gpuleak
    [[ -f $capture ]] || "$build/bench/gen_capture" "$capture" "$events" $((events / 200)) 300 >/dev/null
    captures+=("$capture")
  done
fi
size() { stat -c %s "$1"; }
gz() { gzip -6 -c "$1" | wc -c; }
echo "| capture | bounds | JSON | .pftrace | ratio | JSON gzip | .pftrace gzip |"
echo "|---|---|---|---|---|---|---|"
for capture in "${captures[@]}"; do
  for bounds in default full; do
    flags=()
    [[ $bounds == full ]] && flags=(--full)
    "$build/bin/gpuleak" trace --quiet "${flags[@]}" -o "$dir/t.trace.json" "$capture"
    "$build/bin/gpuleak" trace --quiet "${flags[@]}" --format perfetto -o "$dir/t.pftrace" "$capture"
    j=$(size "$dir/t.trace.json") p=$(size "$dir/t.pftrace")
    printf '| %s | %s | %d | %d | %.2f | %d | %d |\n' "$(basename "$capture")" "$bounds" "$j" "$p" \
      "$(echo "$p / $j" | bc -l)" "$(gz "$dir/t.trace.json")" "$(gz "$dir/t.pftrace")"
  done
done
rm -f "$dir/t.trace.json" "$dir/t.pftrace"
