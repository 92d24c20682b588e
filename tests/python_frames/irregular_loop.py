"""A training-style loop with no marks whose allocation sequence differs from step to step (a
data-dependent number of temporaries at random lines, an augmentation helper that allocates or not),
as run_loop_case.py runs it: `irregular_loop.py leak` keeps KEPT bytes per step, `clean` keeps
nothing. gpuleak finds the iterations from the Python frames (iteration_source python_loop), or,
with `gpuleak run --loop irregular_loop.py:LINE` (the loop head) or `--loop step`, from the hook
(api). Every step moves its batch to the device first and computes a loss last: two passes in a
row that allocate at one line only would read as one (docs/python.md "Loops without marks")."""
import ctypes
import random
import sys

from pyframes_common import cudart, free

STEPS = 40
KEPT = 1 << 20
WEIGHTS = 8 << 20
BATCH = 1 << 18


def alloc(n):
    p = ctypes.c_void_p()
    if cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) != 0:
        raise RuntimeError("cudaMalloc failed")
    return p


def augment(rng, x):
    if rng.random() < 0.5:
        return [alloc(rng.randrange(1, 9) << 16)]
    return []


def step(rng, kept, keep):
    temps = [alloc(BATCH)]  # the batch, on the device
    if rng.random() < 0.7:
        temps.append(alloc(rng.randrange(1, 17) << 16))
    for _ in range(rng.randrange(0, 4)):  # data-dependent: 0-3 ops this step
        temps.append(alloc(rng.randrange(1, 17) << 16))
    temps += augment(rng, temps)
    if rng.random() < 0.5:
        temps.append(alloc(3 << 16))
    temps.append(alloc(4096))  # the loss
    if keep:
        kept.append(alloc(KEPT))
    for t in temps:
        free(t)


def train(keep):
    rng = random.Random(7)
    weights = [alloc(WEIGHTS) for _ in range(3)]
    kept = []
    for i in range(STEPS):  # @loop_head
        step(rng, kept, keep)
    for w in weights:
        free(w)
    return kept


if __name__ == "__main__":
    train(sys.argv[1:] == ["leak"])
