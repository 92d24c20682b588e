"""A stand-in for JAX on the fake CUDA (tests/python_frames/framework_loop.py): like XLA's BFC
allocator, buffers come from a region taken from cudaMalloc in 64 MiB steps and never given back,
unless XLA_PYTHON_CLIENT_ALLOCATOR=platform (then every buffer is its own cudaMalloc/cudaFree)."""
import ctypes
import os

_cudart = ctypes.CDLL(os.environ["PYFRAMES_CUDART"])
_platform = os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR") == "platform"
_region = {"free": 0}
REGION_STEP = 64 << 20


def _malloc(n):
    p = ctypes.c_void_p()
    if _cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) != 0:
        raise MemoryError(n)
    return p


class Array:
    def __init__(self, nbytes):
        self._ptr = None
        if _platform:
            self._ptr = _malloc(nbytes)
        else:
            if _region["free"] < nbytes:
                _malloc(REGION_STEP)
                _region["free"] = REGION_STEP
            _region["free"] -= nbytes

    def __del__(self):
        if self._ptr is not None:
            _cudart.cudaFree(self._ptr)


def ones(nbytes):
    return Array(nbytes)
