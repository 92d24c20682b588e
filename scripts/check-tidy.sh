#!/usr/bin/env bash
# clang-tidy (.clang-tidy: checks that catch real bugs in a preloaded library) over the files listed
# in scripts/tidy-files.txt (the capture path's drain, tally and pairing), or with CHECK_TIDY_ALL=1
# over all of src/core and src/format: the code that runs inside the profiled process and the code
# that reads what it wrote. Fails on any warning. Run by CTest (format.clang_tidy) and
# by hand: scripts/check-tidy.sh [BUILD_DIR] (default build; needs its compile_commands.json).
# Exits 77 (skipped, said on stdout) without clang-tidy or without the compile database.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
tool=${CLANG_TIDY:-}
if [ -z "$tool" ]; then
  for t in clang-tidy-14 clang-tidy; do
    if command -v "$t" >/dev/null; then
      tool=$t
      break
    fi
  done
fi
if [ -z "$tool" ]; then
  echo "check-tidy: clang-tidy not found (apt-get install clang-tidy-14); skipped"
  exit 77
fi
if [ ! -f "$build/compile_commands.json" ]; then
  echo "check-tidy: $build/compile_commands.json not found (configure with scripts/build.sh first); skipped"
  exit 77
fi
if [ "${CHECK_TIDY_ALL:-0}" = 1 ]; then
  files=$(git ls-files 'src/core/*.cpp' 'src/format/*.cpp' 2>/dev/null || find src/core src/format -name '*.cpp' | sort)
else
  files=$(grep -v '^#' scripts/tidy-files.txt | sed '/^$/d')
fi
jobs=$(nproc 2>/dev/null || echo 2)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# One file per process, $jobs at a time; warnings in headers count once per file that includes them.
printf '%s\n' $files | xargs -P "$jobs" -n 1 "$tool" -p "$build" --quiet >"$log" 2>/dev/null || true
if grep -E '(warning|error):' "$log" >/dev/null; then
  grep -E -A3 '(warning|error):' "$log" | head -200
  echo "check-tidy: clang-tidy found problems (above)"
  exit 1
fi
echo "check-tidy: $(printf '%s\n' $files | wc -l) files clean"
