#!/usr/bin/env bash
# browser.viewer: CLI GPULEAK_SO PROGRAM FAKE_CUDA_DIR OUT_DIR [OOM_PROGRAM [POOL_PROGRAM]]
# Exit 77 (skipped) when Chromium or the viewer's node_modules are missing.
set -euo pipefail
cli=$1 shim=$2 program=$3 fake_cuda=$4 out=$5 oom_program=${6:-} pool_program=${7:-}
here=$(cd "$(dirname "$0")" && pwd)
viewer="$here/../../viewer"
chromium=${GPULEAK_CHROMIUM:-/usr/bin/chromium}

if [[ ! -x "$chromium" ]]; then
  echo "SKIPPED: no Chromium at $chromium (apt-get install -y chromium)"
  exit 77
fi
if [[ ! -d "$viewer/node_modules/playwright-core" ]] || ! command -v node >/dev/null; then
  echo "SKIPPED: viewer/node_modules missing (cd viewer && npm ci)"
  exit 77
fi

rm -rf "$out"
mkdir -p "$out/capture"
LD_LIBRARY_PATH="$fake_cuda" LD_PRELOAD="$shim" GPULEAK_OUT="$out/capture" GPULEAK_REPORT_TIMEOUT=0 \
  GPULEAK_QUIET=1 "$program" 40
capture=$(ls "$out"/capture/*.gpuleak | head -n 1)
"$cli" view "$capture" -o "$out/report.html"
# The same page from the report alone must load too.
"$cli" report "$capture" -o "$out/report.json" --quiet
"$cli" view "$out/report.json" -o "$out/from-report.html" --quiet
# A run that runs out of memory (prog_oom: fills a 64 MiB fake device, fails once, recovers).
oom_html=
if [[ -n "$oom_program" ]]; then
  mkdir -p "$out/oom"
  LD_LIBRARY_PATH="$fake_cuda" LD_PRELOAD="$shim" GPULEAK_OUT="$out/oom" GPULEAK_REPORT_TIMEOUT=0 \
    GPULEAK_QUIET=1 "$oom_program" >/dev/null
  "$cli" view "$(ls "$out"/oom/*.gpuleak | head -n 1)" -o "$out/oom.html" --quiet
  oom_html="$out/oom.html"
fi
node "$here/viewer_test.mjs" "$out/report.html" "$out/from-report.html" "$out/screenshot.png" $oom_html
[[ -n "$pool_program" ]] || exit 0
# Issue #28's pages: a PyTorch-shaped report, the issue's fixtures, a caching allocator's blocks.
node "$here/torch_report.mjs" "$out/torch.report.json"
"$cli" view "$out/torch.report.json" -o "$out/torch.html" --quiet
fixtures="$here/../fixtures/issue28"
"$cli" view "$fixtures/torch_oom.report.json" -o "$out/torch_oom.html" --quiet
"$cli" view "$fixtures/torch_three_sites.report.json" -o "$out/torch_three_sites.html" --quiet
mkdir -p "$out/pool"
LD_LIBRARY_PATH="$fake_cuda" LD_PRELOAD="$shim" GPULEAK_OUT="$out/pool" GPULEAK_REPORT_TIMEOUT=0 \
  GPULEAK_QUIET=1 "$pool_program" leak 40 >/dev/null
"$cli" view "$(ls "$out"/pool/*.gpuleak | head -n 1)" -o "$out/pool.html" --quiet
exec node "$here/story_test.mjs" "$out/torch.html" "$out/torch_oom.html" "$out/torch_three_sites.html" "$out/pool.html" "$out"
