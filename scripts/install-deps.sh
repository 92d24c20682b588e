#!/usr/bin/env bash
# Installs what gpuleak's build and tests need, from Debian's packages (Debian 12). Idempotent:
# packages already installed are not fetched again. The CUDA toolkit (headers, nvcc, CUPTI) is
# expected at /usr/local/cuda (GPULEAK_CUDA_ROOT to change); no GPU is needed to build or test.
set -euo pipefail
packages=(cmake g++ make pkg-config binutils python3
  nlohmann-json3-dev libspdlog-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libunwind-dev libdw-dev libelf-dev zlib1g-dev liblzma-dev libbz2-dev clang-14 clang-format python3-pytest protobuf-compiler
  python3-pip python3-setuptools python3-wheel python3-build python3-venv patchelf dpkg-dev ccache)
# Optional: chromium for the viewer's browser test (tests/browser), golang-go for `go tool pprof`
# on `gpuleak export --format pprof` (CliTrace.ExportPprofOpensInGoToolPprof); each test reports
# itself skipped without its package.
optional=(chromium golang-go)
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
cd "$(dirname "$0")/.."
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "gpuleak: installing ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for p in "${optional[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 && continue
  DEBIAN_FRONTEND=noninteractive ${sudo_cmd:-} apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 ||
    echo "gpuleak: optional package $p not installed (the test that needs it will be skipped)"
done
if command -v npm >/dev/null && [ -f viewer/package-lock.json ] && [ ! -d viewer/node_modules ]; then
  (cd viewer && npm ci --no-audit --no-fund >/dev/null 2>&1) ||
    echo "gpuleak: npm ci in viewer/ failed (the browser test will be skipped; the viewer template is prebuilt)"
fi
cuda_root=${GPULEAK_CUDA_ROOT:-/usr/local/cuda}
if [ ! -f "$cuda_root/include/cuda.h" ]; then
  echo "gpuleak: no CUDA toolkit headers at $cuda_root/include (install the CUDA 13 toolkit or set GPULEAK_CUDA_ROOT)" >&2
  exit 2
fi
