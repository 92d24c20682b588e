#!/usr/bin/env bash
# Lays out a sysroot of Debian 11 (bullseye, glibc 2.31) for the portable builds (the wheel, the
# Debian package): binaries linked against it run on any glibc from 2.31 on... and, with the
# few newer symbols pinned by src/compat (docs/install.md), from 2.17 on. Debian 11 is the
# oldest release that Debian's registry still serves: buster (2.28) has moved to its archive.
#
#   scripts/glibc-sysroot.sh [DIR]        default build-sysroot/bullseye; prints DIR
#
# Only Debian's packages, fetched with apt-get through a private list (this machine's sources and
# its installed packages are left alone): glibc's headers and libraries, the kernel's headers,
# the static archives the portable CLI links (elfutils, zlib, xz, bzip2), libunwind's header, and
# the two shared libraries the wheel bundles (libunwind.so.8, liblzma.so.5). The compiler stays
# the host's GCC: its own C++ headers and libstdc++.a are not under the sysroot. The header-only
# libraries (nlohmann-json, spdlog, fmt, CLI11) are the host's, linked in with their CMake
# packages so that CMake finds them inside the sysroot. Idempotent: an existing complete DIR is
# reused.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-sysroot/bullseye}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
stamp=$dir/.gpuleak-sysroot-1
if [ -f "$stamp" ]; then echo "$dir"; exit 0; fi

suite=bullseye
packages=(libc6 libc6-dev linux-libc-dev libcrypt-dev libdw-dev libelf-dev zlib1g-dev liblzma-dev libbz2-dev
  libunwind-dev libunwind8 liblzma5)
apt=$dir.apt
rm -rf "$apt" && mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || { echo "gpuleak sysroot: no $keyring (apt-get install debian-archive-keyring)" >&2; exit 2; }
cat >"$apt/sources.list" <<EOF
deb [signed-by=$keyring] http://deb.debian.org/debian $suite main
deb [signed-by=$keyring] http://deb.debian.org/debian-security $suite-security main
EOF
opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Dir::State::status=/dev/null
  -o Debug::NoLocking=1 -o APT::Sandbox::User=root -o Acquire::Languages=none)
apt-get "${opts[@]}" -qq update || { echo "gpuleak sysroot: cannot reach Debian's $suite lists" >&2; exit 2; }
(cd "$apt/debs" && apt-get "${opts[@]}" -qq download "${packages[@]}") ||
  { echo "gpuleak sysroot: apt-get download ${packages[*]} failed" >&2; exit 2; }
rm -rf "$dir" && mkdir -p "$dir"
for deb in "$apt"/debs/*.deb; do dpkg-deb -x "$deb" "$dir"; done
# Absolute links (libc.so's siblings: libpthread.so -> /lib/...) would leave the sysroot.
find "$dir" -type l -lname '/*' | while read -r link; do
  ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$dir$(readlink "$link")")" "$link"
done
# The host's header-only libraries and their CMake packages, seen from inside the sysroot.
for inc in nlohmann spdlog fmt CLI; do
  [ -e "/usr/include/$inc" ] && ln -sfn "/usr/include/$inc" "$dir/usr/include/$inc"
done
for pkg in /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 /usr/lib/x86_64-linux-gnu/cmake/spdlog \
  /usr/lib/x86_64-linux-gnu/cmake/fmt; do
  [ -e "$pkg" ] || continue
  mkdir -p "$dir$(dirname "$pkg")"
  ln -sfn "$pkg" "$dir$pkg"
done
for pc in /usr/share/pkgconfig/nlohmann_json.pc; do [ -e "$pc" ] && mkdir -p "$dir/usr/share/pkgconfig" && ln -sfn "$pc" "$dir$pc"; done
rm -rf "$apt"
touch "$stamp"
echo "$dir"
