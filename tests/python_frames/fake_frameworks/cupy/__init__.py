"""A stand-in for CuPy on the fake CUDA (tests/python_frames/framework_loop.py, pool_frameworks.py),
with the parts of CuPy's API gpuleak uses: arrays take their memory from the current allocator
(cupy.cuda.set_allocator), by default the MemoryPool's malloc; the pool takes 16 MiB chunks from
cudaMalloc, hands blocks out inside them and keeps freed blocks for requests of the same size
(never giving chunks back); set_allocator(None) turns it off (every array its own cudaMalloc),
MemoryAsyncPool makes every array a cudaMallocAsync. cupy.cuda.calls lists the set_allocator calls
for the tests to check."""
from . import cuda  # noqa: F401
from .cuda import get_default_memory_pool  # noqa: F401

__version__ = "0.0-fake"


class ndarray:
    def __init__(self, nbytes):
        self.nbytes = nbytes
        self.data = cuda._allocate(nbytes)  # a MemoryPointer: the memory is freed with it


def ones(nbytes):
    return ndarray(nbytes)
