#!/usr/bin/env bash
# Builds one fuzzer with clang's libFuzzer and runs it for a bounded time (CI: a few seconds;
# by hand: FUZZ_SECONDS=600). Exits 77 (reported as skipped by CTest) when clang is missing.
# usage: run_fuzzer.sh NAME SOURCE_DIR BUILD_DIR [SECONDS]
set -euo pipefail
name=$1 src=$2 build=$3 seconds=${FUZZ_SECONDS:-${4:-5}}
clang=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$clang" ]; then echo "SKIPPED: $name needs clang++ with libFuzzer"; exit 77; fi
mkdir -p "$build/fuzz/corpus-$name"
"$clang" -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -I"$src/src" \
  "$src/tests/fuzz/$name.cpp" "$src/src/format/capture_reader.cpp" "$src/src/format/free_pairing.cpp" "$src/src/format/memory_source.cpp" \
  "$src/src/format/names.cpp" "$src/src/format/aggregate_fold.cpp" "$src/src/format/allocator_settings.cpp" \
  -o "$build/fuzz/$name"
# Seed with a capture in the aggregated form (format 1.4, made by tests/fuzz/seeds), and with real
# captures when the integration tests left some.
python3 "$src/tests/fuzz/seeds/make_aggregated_seed.py" "$build/fuzz/corpus-$name/aggregated.gpuleak" || true
{ find "${TMPDIR:-/tmp}" -maxdepth 2 -name '*.gpuleak' -size -2M 2>/dev/null || true; } | head -n 20 |
  while read -r f; do cp "$f" "$build/fuzz/corpus-$name/" 2>/dev/null || true; done || true
"$build/fuzz/$name" -max_total_time="$seconds" -rss_limit_mb=2048 -error_exitcode=1 \
  -artifact_prefix="$build/fuzz/" -print_final_stats=1 "$build/fuzz/corpus-$name" 2>&1 | tail -n 60
