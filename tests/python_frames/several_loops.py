"""Several loops in one program, each judged on its own passes (issue #33), run by run_loop_case.py:
`several_loops.py SHAPE`. Every leaking loop keeps KEPT bytes per pass (per call, per request) at
the line marked `# @keep_SHAPE`:
  clean_then_leak  a clean loop of STEPS passes, then a leaking one;
  leak_then_clean  the same two loops the other way round;
  train_eval       a training loop (clean) then an evaluation loop that keeps its outputs; the
                   function around the evaluation loop frees them all when it returns, so the
                   growth is released before the end of the run and is still the loop's leak;
  threads          a handler called on a pool of 4 worker threads (ThreadPoolExecutor.map, no loop
                   of the user's own) keeping one buffer per call: one pass per call;
  asyncio          a dispatcher loop starting a coroutine per request on one thread, four requests
                   in flight at once, each keeping one buffer: the rate per request;
  gather           the same requests started at once by asyncio.gather, four in flight (a
                   semaphore), no loop of the user's own: one pass per request (its task).
"""
import asyncio
import concurrent.futures
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_frameworks", "site-packages"))
import steplib  # noqa: E402

STEPS = 40
KEPT = 1 << 20
OUT = 1 << 18
CALLS = 48
_kept = []


def warm_loop():
    for i in range(STEPS):
        steplib.step(None, i, OUT).free()  # @clean_line


def leaky_loop():
    for i in range(STEPS):
        _kept.append(steplib.step(None, i, KEPT))  # @keep_leaky


def clean_then_leak():
    warm_loop()
    leaky_loop()


def leak_then_clean():
    leaky_loop()
    warm_loop()


def train():
    for i in range(STEPS):
        grads = steplib.step(None, i, OUT)  # @train_line
        grads.free()


def evaluate():
    outputs = []
    for i in range(STEPS):
        outputs.append(steplib.step(None, i, KEPT))  # @keep_eval
    total = len(outputs)
    for o in outputs:  # released when evaluate returns: a longer evaluation runs out of memory
        o.free()
    return total


def train_eval():
    train()
    evaluate()


_lock = threading.Lock()


def handle(request):
    scratch = steplib.empty(OUT)
    kept = steplib.empty(KEPT)  # @keep_threads
    with _lock:
        _kept.append(kept)
    for _ in range(3):
        steplib.step(scratch, request, OUT).free()
    scratch.free()
    return request


def threads():
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(handle, range(CALLS)))


async def answer(request):
    scratch = steplib.empty(OUT)
    await asyncio.sleep(0.001 * (request % 3))
    _kept.append(steplib.empty(KEPT))  # @keep_asyncio
    await asyncio.sleep(0.001)
    scratch.free()
    return request


async def serve():
    pending = set()
    for r in range(CALLS):
        pending.add(asyncio.ensure_future(answer(r)))
        if len(pending) >= 4:  # four requests in flight
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
    await asyncio.gather(*pending)


def asyncio_service():
    asyncio.run(serve())


async def limited(request, slots):
    async with slots:
        return await answer(request)


async def serve_gathered():
    slots = asyncio.Semaphore(4)
    await asyncio.gather(*[limited(r, slots) for r in range(CALLS)])


def gather():
    asyncio.run(serve_gathered())


if __name__ == "__main__":
    {"clean_then_leak": clean_then_leak, "leak_then_clean": leak_then_clean, "train_eval": train_eval,
     "threads": threads, "asyncio": asyncio_service, "gather": gather}[sys.argv[1]]()
