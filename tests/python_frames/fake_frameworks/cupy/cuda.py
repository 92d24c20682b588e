"""The fake cupy.cuda: set_allocator(None) and MemoryAsyncPool, over the fake libcudart."""
import ctypes
import os

_cudart = ctypes.CDLL(os.environ["PYFRAMES_CUDART"])
CHUNK = 16 << 20
calls = []
_pool = {"free": 0}  # the default pool: bytes left in the current chunk
_raw = False


def _malloc(n):
    p = ctypes.c_void_p()
    if _cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) != 0:
        raise MemoryError(n)
    return p


def _allocate(nbytes):
    if _raw:
        return _malloc(nbytes)
    if _pool["free"] < nbytes:  # the pool grows by a chunk; chunks are never returned
        _malloc(CHUNK)
        _pool["free"] = CHUNK
    _pool["free"] -= nbytes
    return None


def _release(ptr, nbytes):
    if ptr is not None:
        _cudart.cudaFree(ptr)


class MemoryAsyncPool:
    def malloc(self, n):
        return _malloc(n)


def set_allocator(allocator=None):
    global _raw
    calls.append("None" if allocator is None else "pool")
    _raw = allocator is None
