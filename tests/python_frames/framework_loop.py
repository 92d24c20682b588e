"""A loop with no marks over a framework's arrays, against the fakes in fake_frameworks/site-packages/ (`cupy`:
a pool growing by 16 MiB chunks, `jax`: a BFC-like region growing by 64 MiB): `framework_loop.py
cupy|jax`. Keeps one 1 MiB array per step, like the H200 cases of issue 13; `gpuleak run --cupy
per-array` / `--jax per-buffer` make every array its own cudaMalloc."""
import importlib
import random
import sys

STEPS = 60


def main(np):
    rng = random.Random(3)
    kept = []
    for step in range(STEPS):
        x = np.ones(rng.randrange(1, 9) << 16)
        y = np.ones(rng.randrange(1, 9) << 16) if rng.random() < 0.5 else None
        kept.append(np.ones(1 << 20))
        del x, y


framework = importlib.import_module(sys.argv[1])
main(framework)
if sys.argv[1] == "cupy":
    print("set_allocator calls:", framework.cuda.calls)
