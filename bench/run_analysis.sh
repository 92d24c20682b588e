#!/usr/bin/env bash
# Analysis of a large capture: generates a synthetic capture (bench/gen_capture.cpp) once, then
# times `gpuleak report --json CAPTURE` ROUNDS times under /usr/bin/time -v and prints wall time
# and peak RSS of each round, with the machine's load average. With BASE=/path/to/another/gpuleak
# it also runs that binary once and says whether the two reports are the same JSON. Not run by CI
# (docs/benchmarks.md has the method and the numbers).
# usage: [BASE=GPULEAK] bench/run_analysis.sh BUILD_DIR [EVENTS=10000000] [ITERATIONS=5000] [SITES=300]
set -euo pipefail
build=$(cd "$1" && pwd)
events=${2:-10000000}
iterations=${3:-5000}
sites=${4:-300}
rounds=${ROUNDS:-3}
dir=${BENCH_DIR:-/tmp/gpuleak-bench}
mkdir -p "$dir"
capture=$dir/synthetic.$events.$iterations.$sites.gpuleak
if [[ ! -f $capture ]]; then
  "$build/bench/gen_capture" "$capture" "$events" "$iterations" "$sites"
fi
ls -l "$capture"
for ((r = 0; r < rounds; r++)); do
  /usr/bin/time -v "$build/bin/gpuleak" report --json "$capture" >"$dir/report.json" 2>"$dir/time.txt"
  wall=$(sed -n 's/.*Elapsed (wall clock) time.*: //p' "$dir/time.txt")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
  user=$(sed -n 's/.*User time (seconds): //p' "$dir/time.txt")
  sys=$(sed -n 's/.*System time (seconds): //p' "$dir/time.txt")
  load=$(sed 's/.*load average: //' <<<"$(uptime)")
  echo "round $r: wall $wall, user ${user} s, system ${sys} s, peak RSS $((rss / 1024)) MiB, load $load"
done
if [[ -n ${BASE:-} ]]; then
  /usr/bin/time -v "$BASE" report --json "$capture" >"$dir/report.base.json" 2>"$dir/time.txt"
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
  wall=$(sed -n 's/.*Elapsed (wall clock) time.*: //p' "$dir/time.txt")
  echo "base: wall $wall, peak RSS $((rss / 1024)) MiB"
  python3 -c 'import json, sys; a, b = (json.load(open(p)) for p in sys.argv[1:]); print("same report" if a == b else "REPORTS DIFFER")' \
    "$dir/report.base.json" "$dir/report.json"
fi
python3 - "$dir/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("verdict", r["verdict"], "iterations", r["analysis"]["primary_iterations"], "leaks",
      [round(l["bytes_per_iteration"]) for l in r["leaks"]])
PY
