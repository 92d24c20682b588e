"""The fake cupy.cuda: MemoryPool, PythonFunctionAllocator, MemoryAsyncPool, set_allocator and
get_allocator, over the fake libcudart (see __init__.py)."""
import ctypes
import os
import threading

_cudart = ctypes.CDLL(os.environ["PYFRAMES_CUDART"])
CHUNK = 16 << 20
calls = []
_lock = threading.Lock()


def _malloc(n):
    p = ctypes.c_void_p()
    if _cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) != 0:
        raise MemoryError(n)
    return p.value


class MemoryPointer:
    """Memory handed out: `release(ptr)` runs when the last reference goes, on that thread."""

    def __init__(self, ptr, release):
        self.ptr = ptr
        self._release = release

    def __del__(self):
        if self._release is not None:
            self._release(self.ptr)


class MemoryPool:
    def __init__(self):
        self._top = CHUNK  # bytes handed out of the newest chunk
        self._chunk = 0
        self._cached = {}  # size -> freed block addresses

    def malloc(self, size):
        size = (size + 511) // 512 * 512
        with _lock:
            free = self._cached.get(size)
            if free:
                ptr = free.pop()
            else:
                if self._top + size > CHUNK:
                    self._chunk = _malloc(max(CHUNK, size))
                    self._top = 0
                ptr = self._chunk + self._top
                self._top += size
        return MemoryPointer(ptr, lambda p: self._give_back(p, size))

    def _give_back(self, ptr, size):
        with _lock:
            self._cached.setdefault(size, []).append(ptr)


class MemoryAsyncPool:
    def malloc(self, size):
        p = ctypes.c_void_p()
        if _cudart.cudaMallocAsync(ctypes.byref(p), ctypes.c_size_t(size), None) != 0:
            raise MemoryError(size)
        return MemoryPointer(p.value, lambda ptr: _cudart.cudaFreeAsync(ctypes.c_void_p(ptr), None))


class PythonFunctionAllocator:
    def __init__(self, malloc_func, free_func):
        self._malloc, self._free = malloc_func, free_func

    def malloc(self, size):
        ptr = self._malloc(size, 0)
        return MemoryPointer(ptr, lambda p: self._free(p, 0))


_default_pool = MemoryPool()


def get_default_memory_pool():
    return _default_pool


def _raw(size):
    return MemoryPointer(_malloc(size), lambda p: _cudart.cudaFree(ctypes.c_void_p(p)))


_current = _default_pool.malloc


def set_allocator(allocator=None):
    global _current
    calls.append("None" if allocator is None else "pool")
    _current = allocator if allocator is not None else _raw


def get_allocator():
    return _current


def _allocate(nbytes):
    return _current(nbytes)
