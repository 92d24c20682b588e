"""Threads that never ran Python (a plain std::thread, and one that looks like PyTorch's autograd
worker: its native stack holds torch::autograd::Engine::thread_main) allocate while the main thread
waits in C with Python frames on its stack: they get no Python frames (never the main thread's);
the autograd one gets the `[autograd backward]` marker in the report."""
import ctypes
import os

from pyframes_common import cudart, done, expect

PLAIN_SIZE = (1 << 16) + 31
AUTOGRAD_SIZE = (1 << 16) + 37

helper = ctypes.CDLL(os.environ["PYFRAMES_HELPER"])
cuda_malloc = ctypes.cast(cudart.cudaMalloc, ctypes.c_void_p)
failed = helper.pyframes_alloc_on_plain_thread(cuda_malloc, ctypes.c_size_t(PLAIN_SIZE), 3)  # @call_plain
failed += helper.pyframes_alloc_on_autograd_thread(cuda_malloc, ctypes.c_size_t(AUTOGRAD_SIZE), 2)
if failed:
    raise SystemExit(f"{failed} cudaMalloc calls failed")

expect(PLAIN_SIZE, 3, frames=())
expect(AUTOGRAD_SIZE, 2, frames=(), autograd_marker=True)
done()
