#!/usr/bin/env bash
# Compares `gpuleak report --format json` of two builds on each capture (as parsed JSON, so that
# only the content counts) and their exit statuses. Not run by CI (docs/benchmarks.md).
# usage: bench/compare_reports.sh BASE_GPULEAK NEW_GPULEAK CAPTURE...
set -uo pipefail
base=$1 new=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
same=0 differ=0
for c in "$@"; do
  "$base" report --format json "$c" >"$tmp/base.json" 2>/dev/null
  rb=$?
  "$new" report --format json "$c" >"$tmp/new.json" 2>/dev/null
  rn=$?
  if [[ $rb == "$rn" ]] && python3 - "$tmp/base.json" "$tmp/new.json" <<'PY'; then
import json, sys
def load(p):
    try:
        return json.load(open(p))
    except ValueError:
        return open(p).read()
sys.exit(0 if load(sys.argv[1]) == load(sys.argv[2]) else 1)
PY
    same=$((same + 1))
  else
    echo "differs: $c (exit $rb vs $rn)"
    differ=$((differ + 1))
  fi
done
echo "same: $same, different: $differ"
[[ $differ == 0 ]]
