#!/usr/bin/env bash
# Installs what gpuleak's build and tests need, from Debian's packages (Debian 12). Idempotent:
# packages already installed are not fetched again. The CUDA toolkit (headers, nvcc, CUPTI) is
# expected at /usr/local/cuda (GPULEAK_CUDA_ROOT to change); no GPU is needed to build or test.
set -euo pipefail
packages=(cmake g++ make pkg-config binutils python3
  nlohmann-json3-dev libspdlog-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libunwind-dev libdw-dev libelf-dev clang-14)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "gpuleak: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cuda_root=${GPULEAK_CUDA_ROOT:-/usr/local/cuda}
if [ ! -f "$cuda_root/include/cuda.h" ]; then
  echo "gpuleak: no CUDA toolkit headers at $cuda_root/include (install the CUDA 13 toolkit or set GPULEAK_CUDA_ROOT)" >&2
  exit 2
fi
