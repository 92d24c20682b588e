"""Allocations in asyncio coroutines: one awaited directly (its frame chains to the awaiting
coroutine) and four run as tasks by asyncio.gather (their frames chain to the event loop)."""
import asyncio
import ctypes

from pyframes_common import cudart, done, expect

AWAITED_SIZE = (1 << 17) + 3
GATHER_SIZE = (1 << 17) + 13


async def load_batch(size):
    await asyncio.sleep(0)
    p = ctypes.c_void_p()
    cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size))  # @async_alloc
    return p


async def pipeline():
    kept = []
    for _ in range(3):
        kept.append(await load_batch(AWAITED_SIZE))  # @pipeline_await
    kept += await asyncio.gather(*(load_batch(GATHER_SIZE) for _ in range(4)))
    return kept


kept = asyncio.run(pipeline())

HERE = __file__
expect(AWAITED_SIZE, 3, frames=[("load_batch", HERE, "async_alloc"), ("pipeline", HERE, "pipeline_await")])
expect(GATHER_SIZE, 4, frames=[("load_batch", HERE, "async_alloc"), (("Handle._run", "_run"), "events.py", None)])
done()
