#!/usr/bin/env bash
# Fails when a C/C++ file of the tree is not formatted as .clang-format says (clang-format
# --dry-run -Werror). Run by CTest (format.clang_format) and by hand: scripts/check-format.sh.
# scripts/format-exempt.txt lists the files left in their own style (the fake CUDA, the test
# programs and the GPU tests, written in the CUDA samples' style); a file in it is skipped, and a
# new file is never exempt. Exits 77 (skipped) without clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
tool=${CLANG_FORMAT:-clang-format}
if ! command -v "$tool" >/dev/null; then
  echo "check-format: $tool not found (apt-get install clang-format); skipped"
  exit 77
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files '*.cpp' '*.h' '*.cc' '*.cu')
else
  files=$(find src tools tests bench include -name '*.cpp' -o -name '*.h' -o -name '*.cc' -o -name '*.cu' | sort)
fi
exempt=$(grep -v '^#' scripts/format-exempt.txt | sed '/^$/d' || true)
bad=0
for f in $files; do
  [ -f "$f" ] || continue
  skip=0
  for e in $exempt; do
    case "$f" in $e) skip=1 ;; esac
  done
  [ $skip -eq 1 ] && continue
  if ! "$tool" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "check-format: $f is not formatted (clang-format -i $f)"
    bad=1
  fi
done
[ $bad -eq 0 ] && echo "check-format: ok"
exit $bad
