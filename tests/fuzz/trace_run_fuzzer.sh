#!/usr/bin/env bash
# Builds the Chrome trace reader fuzzer with clang's libFuzzer and runs it for a bounded time
# (CI: a few seconds; by hand: FUZZ_SECONDS=600). Exits 77 (skipped) without clang or zlib.
# usage: trace_run_fuzzer.sh SOURCE_DIR BUILD_DIR [SECONDS]
set -euo pipefail
src=$1 build=$2 seconds=${FUZZ_SECONDS:-${3:-5}}
name=trace_reader_fuzzer
clang=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$clang" ]; then echo "SKIPPED: $name needs clang++ with libFuzzer"; exit 77; fi
if [ ! -e /usr/include/zlib.h ]; then echo "SKIPPED: $name needs zlib headers"; exit 77; fi
corpus="$build/fuzz/corpus-$name"
mkdir -p "$corpus"
"$clang" -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -I"$src/src" \
  "$src/tests/fuzz/$name.cpp" "$src/src/output/trace/chrome_trace_reader.cpp" "$src/src/output/trace/file_io.cpp" \
  -lz -o "$build/fuzz/$name"
# Seeds: a few small traces of each shape.
printf '[\n{"ph":"M","name":"gpuleak_trace","pid":1,"tid":0,"args":{"realtime_anchor_ns":1}},\n{"ph":"C","name":"cuda:0 live","pid":1,"ts":1.5,"args":{"bytes":4}}\n]\n' > "$corpus/seed-lines.json"
printf '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":2}],"displayTimeUnit":"ms"}' > "$corpus/seed-object.json"
printf '[{"ph":"i","ts":1},\n{"ph":"i",' > "$corpus/seed-torn.json"
{ find "${TMPDIR:-/tmp}" -maxdepth 2 -name '*.trace.json' -size -256k 2>/dev/null || true; } | head -n 5 |
  while read -r f; do cp "$f" "$corpus/" 2>/dev/null || true; done || true
"$build/fuzz/$name" -max_total_time="$seconds" -rss_limit_mb=2048 -error_exitcode=1 \
  -artifact_prefix="$build/fuzz/" -print_final_stats=1 "$corpus" 2>&1 | tail -n 60
