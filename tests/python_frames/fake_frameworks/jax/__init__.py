"""A stand-in for JAX on the fake CUDA (tests/python_frames/framework_loop.py, pool_frameworks.py),
with the parts of JAX's API gpuleak uses. Like XLA's BFC allocator, buffers come from one arena
taken from cudaMalloc at the first array (ARENA bytes) and never given back; a freed buffer is
kept for a request of the same size; a request that does not fit raises
jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: ...") with no CUDA call failing. With
XLA_PYTHON_CLIENT_ALLOCATOR=platform or address every buffer is its own cudaMalloc/cudaFree.
jax.live_arrays() lists the live arrays; each has nbytes, unsafe_buffer_pointer(), devices(),
is_deleted() and a creation `traceback` (frames innermost first, hashable), as jaxlib's."""
import ctypes
import os
import sys
import threading
import weakref

from . import errors  # noqa: F401

__version__ = "0.0-fake"
_cudart = ctypes.CDLL(os.environ["PYFRAMES_CUDART"])
ARENA = int(os.environ.get("FAKE_JAX_ARENA", str(256 << 20)))
_lock = threading.Lock()
_arena = {"base": 0, "top": 0, "cached": {}, "in_use": 0}
_live = weakref.WeakValueDictionary()  # id -> Array
_order = [0]


def _per_buffer():
    return os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR") in ("platform", "address")


def _malloc(n):
    p = ctypes.c_void_p()
    if _cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) != 0:
        raise MemoryError(n)
    return p.value


class Device:
    id = 0
    local_hardware_id = 0
    platform = "gpu"

    def memory_stats(self):
        largest = ARENA - _arena["top"]
        for size, free in _arena["cached"].items():
            if free:
                largest = max(largest, size)
        return {"bytes_in_use": _arena["in_use"], "largest_free_block_bytes": largest, "bytes_limit": ARENA,
                "pool_bytes": ARENA}


_device = Device()


def local_devices():
    return [_device]


class Frame:
    def __init__(self, file_name, function_name, line_num):
        self.file_name, self.function_name, self.line_num = file_name, function_name, line_num


class Traceback:
    def __init__(self, frame):
        raw = []
        while frame is not None:
            raw.append((frame.f_code, frame.f_lineno))
            frame = frame.f_back
        self._raw = tuple(raw)

    @property
    def frames(self):
        return [Frame(code.co_filename, code.co_name, line) for code, line in self._raw]

    def __eq__(self, other):
        return isinstance(other, Traceback) and self._raw == other._raw

    def __hash__(self):
        return hash(self._raw)


def _take(nbytes):
    if _per_buffer():
        return _malloc(nbytes)
    with _lock:
        if not _arena["base"]:
            _arena["base"] = _malloc(ARENA)
        free = _arena["cached"].get(nbytes)
        if free:
            ptr = free.pop()
        elif _arena["top"] + nbytes <= ARENA:
            ptr = _arena["base"] + _arena["top"]
            _arena["top"] += nbytes
        else:
            raise errors.JaxRuntimeError(
                "RESOURCE_EXHAUSTED: Out of memory while trying to allocate %d bytes. (device ordinal 0)" % nbytes)
        _arena["in_use"] += nbytes
        return ptr


def _give_back(ptr, nbytes):
    if _per_buffer():
        _cudart.cudaFree(ctypes.c_void_p(ptr))
        return
    with _lock:
        _arena["cached"].setdefault(nbytes, []).append(ptr)
        _arena["in_use"] -= nbytes


class Array:
    def __init__(self, nbytes):
        self.nbytes = nbytes
        self._ptr = _take(nbytes)
        self.traceback = Traceback(sys._getframe(1))
        _live[id(self)] = self

    def unsafe_buffer_pointer(self):
        return self._ptr

    def devices(self):
        return {_device}

    def is_deleted(self):
        return False

    def __del__(self):
        _give_back(self._ptr, self.nbytes)


def ones(nbytes):
    return Array(nbytes)


def live_arrays():
    return list(_live.values())
