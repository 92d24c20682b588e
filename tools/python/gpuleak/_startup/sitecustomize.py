"""Loaded at interpreter start-up by `gpuleak run --loop/--cupy` (this folder is put first on
PYTHONPATH): installs the hooks they asked for (gpuleak._hooks), then runs the sitecustomize this
one hides, if there is one further along sys.path. Nothing here may stop the program: a failure is
one line on stderr and the program runs unhooked."""

import sys


def _gpuleak_start():
    try:
        from gpuleak import _hooks
        _hooks.install_from_environment()
    except Exception as e:  # never the program's problem
        sys.stderr.write("gpuleak: start-up hook failed (%s: %s); running without it\n" % (type(e).__name__, e))


def _chain():
    """Import the next sitecustomize on sys.path, the one this file shadows."""
    import importlib.util
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    me = sys.modules.get(__name__)
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        from importlib.machinery import PathFinder
        spec = PathFinder.find_spec("sitecustomize", rest)
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)
    except Exception as e:
        if me is not None:
            sys.modules["sitecustomize"] = me
        sys.stderr.write("gpuleak: the program's own sitecustomize failed (%s: %s)\n" % (type(e).__name__, e))


_gpuleak_start()
_chain()
