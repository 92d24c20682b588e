#!/usr/bin/env bash
# Builds one fuzzer of gpuleak's JSON inputs with clang's libFuzzer and runs it for a bounded time
# (CI: a few seconds; by hand: FUZZ_SECONDS=600). Exits 77 (skipped) without clang or zlib.
#   report_gate_fuzzer   `gpuleak check`: a report (and a suppressions file), evaluated and written
#   report_diff_fuzzer   `gpuleak diff`: two reports, diffed
#   view_report_fuzzer   `gpuleak view REPORT`: a report, embedded in the page
#   trace_reader_fuzzer  `gpuleak merge`: a Chrome trace, gzip or not
# Seeds: small documents of each shape, and reports/traces the tests left in $TMPDIR.
# usage: run_json_fuzzer.sh NAME SOURCE_DIR BUILD_DIR [SECONDS]
set -euo pipefail
name=$1 src=$2 build=$3 seconds=${FUZZ_SECONDS:-${4:-5}}
clang=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$clang" ]; then echo "SKIPPED: $name needs clang++ with libFuzzer"; exit 77; fi
if [ ! -e /usr/include/zlib.h ]; then echo "SKIPPED: $name needs zlib headers"; exit 77; fi
corpus="$build/fuzz/corpus-$name"
mkdir -p "$corpus"
s=$src/src
text=("$s/text/atomic_file.cpp" "$s/text/bounded_read.cpp" "$s/text/escape.cpp" "$s/text/json_input.cpp")
gate=()
for f in report_view evaluate budgets diff pairing sizes suppressions writer_junit writer_github writer_plain; do
  gate+=("$s/gate/$f.cpp")
done
report='{"schema": "gpuleak.report/1", "run": {"program": "train", "pid": 7, "capture": {"events": 40}},
 "verdict": "leak", "iteration_source": "marks", "analysis": {"warmup_iterations": 1},
 "devices": [{"index": 0, "name": "GPU", "total_bytes": 1000, "peak_live_bytes": 900, "live_at_exit_bytes": 800,
   "verdict": "leak", "growth_bytes_per_iteration": 100.5, "forecast": {"iterations_left": 3, "seconds_left": 1.5}}],
 "iterations": [{"index": 0, "loop": "step", "primary": true, "start_ns": 1, "end_ns": 2,
   "devices": [{"index": 0, "live_end_bytes": 100, "peak_bytes": 200}]}],
 "leaks": [{"site_id": "00aa", "device": 0, "bytes_per_iteration": 100, "live_bytes": 800, "live_count": 8,
   "first_iteration": 1, "confidence": 0.9, "live_by_iteration": [100, 200],
   "stack": [{"kind": "native", "function": "f", "file": "/a.cpp", "line": 3}]}],
 "oom": {"events": [{"device": 0, "requested_bytes": 5, "api": "cuMemAlloc", "stack": []}]}}'
seed_reports() {
  printf '{"schema": "gpuleak.report/1"}' > "$corpus/seed-minimal.json"
  printf "1E8884888888" > "$corpus/seed-number-overflow.json"  # once escaped as an uncaught exception
  printf '%s' "$report" > "$corpus/seed-report.json"
  { find "${TMPDIR:-/tmp}" -maxdepth 2 -name '*.report.json' -size -256k 2>/dev/null || true; } | head -n 5 |
    while read -r f; do cp "$f" "$corpus/" 2>/dev/null || true; done || true
}
case $name in
  report_gate_fuzzer)
    sources=("${gate[@]}" "${text[@]}")
    seed_reports ;;
  report_diff_fuzzer)
    sources=("${gate[@]}" "${text[@]}")
    seed_reports
    { printf '%s\0' "$report"; printf '%s' "${report/\"bytes_per_iteration\": 100/\"bytes_per_iteration\": 300}"; } \
      > "$corpus/seed-pair.json" ;;
  view_report_fuzzer)
    sources=("$s/output/view/html_document.cpp" "$s/output/view/report_input.cpp" "${text[@]}")
    seed_reports ;;
  trace_reader_fuzzer)
    sources=("$s/output/trace/chrome_trace_reader.cpp" "$s/output/trace/file_io.cpp" "${text[@]}")
    printf '[\n{"ph":"M","name":"gpuleak_trace","pid":1,"tid":0,"args":{"realtime_anchor_ns":1}},\n{"ph":"C","name":"cuda:0 live","pid":1,"ts":1.5,"args":{"bytes":4}}\n]\n' > "$corpus/seed-lines.json"
    printf '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":2}],"displayTimeUnit":"ms"}' > "$corpus/seed-object.json"
    printf '[{"ph":"i","ts":1},\n{"ph":"i",' > "$corpus/seed-torn.json"
    { find "${TMPDIR:-/tmp}" -maxdepth 2 -name '*.trace.json' -size -256k 2>/dev/null || true; } | head -n 5 |
      while read -r f; do cp "$f" "$corpus/" 2>/dev/null || true; done || true ;;
  *) echo "unknown fuzzer $name" >&2; exit 2 ;;
esac
# Nesting at the parser's bound, and one level past it (text/limits.h: 512).
{ for _ in $(seq 512); do printf '['; done; for _ in $(seq 512); do printf ']'; done; } > "$corpus/seed-depth-512.json"
{ for _ in $(seq 513); do printf '['; done; } > "$corpus/seed-depth-513.json"
"$clang" -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -I"$src/src" "$src/tests/fuzz/$name.cpp" \
  "${sources[@]}" -lz -o "$build/fuzz/$name"
"$build/fuzz/$name" -max_total_time="$seconds" -rss_limit_mb=2048 -error_exitcode=1 \
  -artifact_prefix="$build/fuzz/" -print_final_stats=1 "$corpus" 2>&1 | tail -n 60
