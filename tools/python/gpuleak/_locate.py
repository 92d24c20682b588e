"""Where the gpuleak shim (libgpuleak.so) and command line (gpuleak) are, for the pytest plugin.

The shim, first found wins:
  1. $GPULEAK_LIB;
  2. a build of the checkout this package sits in: <checkout>/build/lib/libgpuleak.so
     (tools/python/gpuleak -> ../../build/lib);
  3. an install: <prefix>/lib/libgpuleak.so for the package installed by CMake under
     <prefix>/lib/gpuleak/python/gpuleak;
  4. next to a `gpuleak` on PATH: <bin>/../lib/libgpuleak.so.
The command line: $GPULEAK_CLI, else <shim's folder>/../bin/gpuleak, else `gpuleak` on PATH.
"""

import os
import shutil
from pathlib import Path

_HERE = Path(__file__).resolve().parent


class NotFound(RuntimeError):
    """One line saying what is missing and which variable to set."""


def find_shim():
    env = os.environ.get("GPULEAK_LIB")
    if env:
        if not os.path.isfile(env):
            raise NotFound("GPULEAK_LIB=%s is not a file" % env)
        return os.path.abspath(env)
    candidates = [_HERE.parents[2] / "build" / "lib" / "libgpuleak.so", _HERE.parents[2] / "libgpuleak.so"]
    on_path = shutil.which("gpuleak")
    if on_path:
        candidates.append(Path(on_path).resolve().parent.parent / "lib" / "libgpuleak.so")
    for c in candidates:
        if c.is_file():
            return str(c)
    raise NotFound("cannot find libgpuleak.so (looked in %s); build gpuleak or set GPULEAK_LIB"
                   % ", ".join(str(c.parent) for c in candidates))


def find_cli(shim):
    env = os.environ.get("GPULEAK_CLI")
    if env:
        if not os.access(env, os.X_OK):
            raise NotFound("GPULEAK_CLI=%s is not an executable" % env)
        return os.path.abspath(env)
    beside = Path(shim).resolve().parent.parent / "bin" / "gpuleak"
    if os.access(str(beside), os.X_OK):
        return str(beside)
    on_path = shutil.which("gpuleak")
    if on_path:
        return on_path
    raise NotFound("cannot find the gpuleak command (looked in %s and PATH); set GPULEAK_CLI" % beside.parent)
