#!/usr/bin/env bash
# Everything a clean machine needs to run every test: dependencies, build, CTest.
# GPU-only tests report themselves as skipped where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build=${BUILD_DIR:-build}
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" --timeout 600
