"""A stand-in for CuPy on the fake CUDA (tests/python_frames/framework_loop.py): arrays come from a
pool that takes 16 MiB chunks from cudaMalloc and never gives them back, until
cupy.cuda.set_allocator(None) turns the pool off (every array then its own cudaMalloc/cudaFree),
as in CuPy. cupy.cuda.calls lists the set_allocator calls, for the test to check."""
from . import cuda  # noqa: F401


class ndarray:
    def __init__(self, nbytes):
        self.nbytes = nbytes
        self._ptr = cuda._allocate(nbytes)

    def __del__(self):
        cuda._release(self._ptr, self.nbytes)


def ones(nbytes):
    return ndarray(nbytes)
