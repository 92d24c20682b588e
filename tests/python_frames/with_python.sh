#!/bin/sh
# with_python.sh INTERPRETER ARGS...: runs INTERPRETER ARGS, or reports the test skipped (exit 77)
# when the interpreter is gone since the build was configured.
if ! command -v "$1" >/dev/null 2>&1; then
  echo "$1 not found: the Python call-site test is skipped"
  exit 77
fi
exec "$@"
