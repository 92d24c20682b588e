#!/usr/bin/env bash
# Builds the report/gate fuzzer with clang's libFuzzer and runs it for a bounded time (CI: a few
# seconds; by hand: FUZZ_SECONDS=600). Seeds: the example report and reports the tests left.
# Exits 77 (skipped) without clang. usage: run_gate_fuzzer.sh SOURCE_DIR BUILD_DIR [SECONDS]
set -euo pipefail
src=$1 build=$2 seconds=${FUZZ_SECONDS:-${3:-5}}
name=report_gate_fuzzer
clang=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$clang" ]; then echo "SKIPPED: $name needs clang++ with libFuzzer"; exit 77; fi
corpus="$build/fuzz/corpus-$name"
mkdir -p "$corpus"
"$clang" -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -I"$src/src" "$src/tests/fuzz/$name.cpp" \
  "$src"/src/gate/{report_view,evaluate,budgets,sizes,suppressions,escape,writer_junit,writer_github,writer_plain}.cpp \
  -o "$build/fuzz/$name"
printf '{"schema": "gpuleak.report/1"}' > "$corpus/seed-minimal.json"
printf "1E8884888888" > "$corpus/seed-number-overflow.json"  # once escaped as an uncaught exception
{ find "${TMPDIR:-/tmp}" -maxdepth 2 -name '*.report.json' -size -256k 2>/dev/null || true; } | head -n 5 |
  while read -r f; do cp "$f" "$corpus/" 2>/dev/null || true; done || true
"$build/fuzz/$name" -max_total_time="$seconds" -rss_limit_mb=2048 -error_exitcode=1 \
  -artifact_prefix="$build/fuzz/" -print_final_stats=1 "$corpus" 2>&1 | tail -n 60
