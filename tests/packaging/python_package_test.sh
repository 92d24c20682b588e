#!/usr/bin/env bash
# The Python package installed alone, as docs/ci.md says (issue #31): `python3 -m venv .venv &&
# .venv/bin/pip install ./tools/python`, offline (--no-index: nothing may come from an index), with
# Debian's /usr/bin/python3 and with every other CPython 3.8+ on this machine (pyenv's). Each
# install must import, load the pytest plugin's entry point, find the CLI and the shim of BUILD_DIR
# through GPULEAK_PREFIX, and without it say in one line where it looked.
# usage: python_package_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$1
build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pythons=(/usr/bin/python3)
for p in /root/.pyenv/versions/*/bin/python3 /usr/local/bin/python3.1[0-9]; do
  [ -x "$p" ] && pythons+=("$p")
done
passed=0
failed=0
for py in "${pythons[@]}"; do
  version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
  "$py" -c 'import sys; sys.exit(sys.version_info < (3, 8))' || continue  # requires-python >= 3.8
  venv=$work/venv-$passed-$failed
  if ! "$py" -m venv "$venv" >/dev/null 2>&1; then
    echo "SKIP $py ($version): no venv module"
    continue
  fi
  why=""
  "$venv/bin/pip" install -q --no-index "$src/tools/python" >"$work/pip.log" 2>&1 || why="pip install failed: $(tail -n 1 "$work/pip.log")"
  if [ -z "$why" ]; then
    found=$(cd "$work" && GPULEAK_PREFIX=$build "$venv/bin/python" -c '
import importlib.metadata as m
from gpuleak import _locate
shim = _locate.find_shim()
print(shim, _locate.find_cli(shim), [e.name for e in m.entry_points().select(group="pytest11")] if hasattr(m.entry_points(), "select") else "")' 2>&1)
    [[ $found == "$build/lib/libgpuleak.so $build/bin/gpuleak"* ]] || why="GPULEAK_PREFIX not followed: $found"
    [[ $found == *gpuleak.pytest_plugin* ]] || [ "$version" = 3.8 ] || [ "$version" = 3.9 ] || why="${why:-no pytest11 entry point: $found}"
  fi
  if [ -z "$why" ]; then
    lost=$(cd "$work" && env -u GPULEAK_PREFIX PATH=/usr/bin:/bin "$venv/bin/python" -c 'from gpuleak import _locate; _locate.find_shim()' 2>&1 | tail -n 1)
    [[ $lost == *"cannot find libgpuleak.so (looked in"* ]] || why="no one-line answer without an install: $lost"
  fi
  if [ -z "$why" ]; then
    echo "PASS $py ($version)"
    passed=$((passed + 1))
  else
    echo "FAIL $py ($version): $why"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
