"""gpuleak: tell the gpuleak profiler where your loop's iterations are.

    import gpuleak

    for batch in gpuleak.iterate(loader, loop="train"):
        step(batch)

    with gpuleak.iteration("eval"):
        evaluate()

The calls go to the profiler's shim (libgpuleak.so, preloaded by `gpuleak run` or LD_PRELOAD)
through ctypes: the exported C functions gpuleak_api_iteration_begin/end, gpuleak_api_mark and
gpuleak_api_active are looked up once in the process's global symbols. Without the shim every
call is a no-op, so the marks can stay in production code. Iterations marked here are reported
with iteration_source "api", like the C API's (include/gpuleak/gpuleak.h).

gpuleak.report reads a report file into dataclasses; gpuleak.pytest_plugin is the pytest plugin.
"""

import contextlib
import ctypes
import threading

from . import report  # noqa: F401  (gpuleak.report.load)

__all__ = ["iterate", "iteration", "mark", "active", "report"]
__version__ = "0.1.0"


class _Shim:
    """The shim's entry points, looked up on first use (None each when the shim is absent)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._looked = False
        self.begin = self.end = self.mark = self.active = None

    def load(self):
        if self._looked:
            return self
        with self._lock:
            if not self._looked:
                try:
                    process = ctypes.CDLL(None)  # the global scope: the program and LD_PRELOADed libraries
                except OSError:
                    process = None
                self.begin = _lookup(process, "gpuleak_api_iteration_begin", [ctypes.c_char_p], None)
                self.end = _lookup(process, "gpuleak_api_iteration_end", [], None)
                self.mark = _lookup(process, "gpuleak_api_mark", [ctypes.c_char_p], None)
                self.active = _lookup(process, "gpuleak_api_active", [], ctypes.c_int)
                self._looked = True
        return self


def _lookup(process, name, argtypes, restype):
    if process is None:
        return None
    try:
        fn = getattr(process, name)
    except AttributeError:
        return None
    fn.argtypes = argtypes
    fn.restype = restype
    return fn


_shim = _Shim()


def _label(text):
    if text is None:
        return None
    # The C side reads a NUL-terminated string: stop at an embedded NUL instead of failing.
    return str(text).encode("utf-8", "backslashreplace").split(b"\0", 1)[0]


def active():
    """True when the gpuleak shim is loaded in this process and tracking."""
    fn = _shim.load().active
    return bool(fn()) if fn is not None else False


def mark(label):
    """A labelled instant on gpuleak's timeline ("checkpoint saved")."""
    fn = _shim.load().mark
    if fn is not None:
        fn(_label(label))


# Called at every iteration boundary, before the boundary reaches the shim: f("begin", False) and
# f("end", False). gpuleak._jax samples JAX's live arrays here. A loop observer that finds passes
# by itself (no marks) calls at_boundary("end", nested) at each pass: nested is True for a loop
# inside another observed loop or callback, whose passes a sampler may thin out to bound its cost.
_boundary_observers = []


def at_boundary(event, nested=False):
    """An iteration boundary ("begin" or "end") for the samplers in _boundary_observers; a failing
    sampler is never the program's problem."""
    for observe in _boundary_observers:
        try:
            observe(event, nested)
        except Exception:
            pass


def _begin(loop):
    fn = _shim.load().begin
    if fn is not None:
        if _boundary_observers:
            at_boundary("begin")
        fn(_label(loop))


def _end():
    fn = _shim.load().end
    if fn is not None:
        if _boundary_observers:
            at_boundary("end")
        fn()


@contextlib.contextmanager
def iteration(loop="step"):
    """One iteration of loop `loop` for the duration of the with block.

    An iteration of the same loop still open is closed first (the C API's rule); loops with
    different names (train, eval) are kept apart."""
    _begin(loop)
    try:
        yield
    finally:
        _end()


def iterate(iterable, loop="train"):
    """Yields the items of `iterable`, each inside one iteration of loop `loop`.

    The iteration covers the loop body (from the item being handed out until the next one is
    asked for); fetching the item is not part of it. Leaving the loop early (break, an exception)
    ends the open iteration."""
    for item in iterable:
        _begin(loop)
        try:
            yield item
        finally:
            _end()
