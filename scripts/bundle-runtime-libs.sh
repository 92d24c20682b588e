#!/usr/bin/env bash
# Copies the non-base shared libraries gpuleak uses (elfutils for the CLI's symbolizer, libunwind
# for the shim's stacks) next to libgpuleak.so, so that a build folder can be carried to a machine
# without them (the GPU machine has no package registry). The CLI's RUNPATH ($ORIGIN/../lib) and
# the shim's ($ORIGIN) find them there; a machine that has them installed ignores the copies.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
dest=$build/lib
mkdir -p "$dest"
for lib in libdw.so.1 libelf.so.1 libunwind.so.8; do
  src=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')
  [ -n "$src" ] || { echo "bundle: $lib not found on this machine" >&2; exit 2; }
  cp -L "$src" "$dest/$lib"
done
echo "bundled into $dest: $(cd "$dest" && ls libdw.so.1 libelf.so.1 libunwind.so.8 | tr '\n' ' ')"
