"""Where the gpuleak shim (libgpuleak.so) and command line (gpuleak) are, for the pytest plugin
and for `python -m gpuleak`.

The shim, first found wins:
  1. $GPULEAK_LIB;
  2. the wheel's own copy: gpuleak/_native/lib/libgpuleak.so (setup.py puts it there);
  3. an install by CMake (the Debian package, `cmake --install`): the paths in gpuleak/_layout.py,
     written at install time relative to this folder;
  4. a build of the checkout this package sits in: <checkout>/build/lib/libgpuleak.so;
  5. $GPULEAK_PREFIX (an install's prefix: the package installed alone, apart from the native
     part): <prefix>/lib/libgpuleak.so or <prefix>/lib/gpuleak/libgpuleak.so;
  6. next to a `gpuleak` on PATH: <bin>/../lib/libgpuleak.so or <bin>/../lib/gpuleak/libgpuleak.so.
The command line: $GPULEAK_CLI, else the wheel's gpuleak/_native/bin/gpuleak, else the install's,
else $GPULEAK_PREFIX/bin/gpuleak, else <shim's folder>/../bin/gpuleak, else `gpuleak` on PATH.
"""

import os
import shutil
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_NATIVE = _HERE / "_native"


class NotFound(RuntimeError):
    """One line saying what is missing and which variable to set."""


def _installed(key):
    try:
        from . import _layout  # only in a CMake install
    except ImportError:
        return None
    return (_HERE / getattr(_layout, key)).resolve()


def bundled_cli():
    """The command line that ships with this package (wheel or install), or None."""
    for c in (_NATIVE / "bin" / "gpuleak", _installed("CLI")):
        if c is not None and os.access(str(c), os.X_OK):
            return str(c)
    return None


def find_shim():
    env = os.environ.get("GPULEAK_LIB")
    if env:
        if not os.path.isfile(env):
            raise NotFound("GPULEAK_LIB=%s is not a file" % env)
        return os.path.abspath(env)
    candidates = [_NATIVE / "lib" / "libgpuleak.so", _installed("SHIM"),
                  _HERE.parents[2] / "build" / "lib" / "libgpuleak.so"]
    prefixes = [Path(os.environ["GPULEAK_PREFIX"])] if os.environ.get("GPULEAK_PREFIX") else []
    on_path = shutil.which("gpuleak")
    if on_path:
        prefixes.append(Path(on_path).resolve().parent.parent)
    for prefix in prefixes:
        candidates += [prefix / "lib" / "libgpuleak.so", prefix / "lib" / "gpuleak" / "libgpuleak.so"]
    candidates = [c for c in candidates if c is not None]
    for c in candidates:
        if c.is_file():
            return str(c)
    raise NotFound("cannot find libgpuleak.so (looked in %s and next to a gpuleak on PATH); install gpuleak "
                   "(README: Install), or set GPULEAK_PREFIX to its prefix or GPULEAK_LIB to the library"
                   % ", ".join(str(c.parent) for c in candidates))


def find_cli(shim):
    env = os.environ.get("GPULEAK_CLI")
    if env:
        if not os.access(env, os.X_OK):
            raise NotFound("GPULEAK_CLI=%s is not an executable" % env)
        return os.path.abspath(env)
    own = bundled_cli()
    if own:
        return own
    prefix = os.environ.get("GPULEAK_PREFIX")
    if prefix and os.access(os.path.join(prefix, "bin", "gpuleak"), os.X_OK):
        return os.path.join(os.path.abspath(prefix), "bin", "gpuleak")
    beside = Path(shim).resolve().parent.parent / "bin" / "gpuleak"
    if os.access(str(beside), os.X_OK):
        return str(beside)
    on_path = shutil.which("gpuleak")
    if on_path:
        return on_path
    raise NotFound("cannot find the gpuleak command (looked in %s and PATH); set GPULEAK_CLI" % beside.parent)
