"""CuPy's pool and JAX's arena in their default modes, against the fakes in fake_frameworks/site-packages/, as
run_loop_case.py runs them under `gpuleak run` (no mode flag, no allocator switch):

  pool_frameworks.py cupy leak|clean   a worker thread makes each step's arrays (a batch, 0-3
      data-dependent temporaries, a 1 MiB loss) and this thread drops them: every free is made on
      another thread than its allocation. `leak` keeps each loss (history.append).
  pool_frameworks.py jax leak|clean    each step makes a batch, temporaries and a 4 MiB loss;
      `leak` keeps each loss. Marked with gpuleak.iterate: the boundaries where the live arrays
      are sampled.
  pool_frameworks.py jax oom           keeps 4 MiB a step in a 64 MiB arena until JAX raises
      RESOURCE_EXHAUSTED, catches it and goes on (exit 0).
  pool_frameworks.py cupy async        the program sets MemoryAsyncPool itself, then runs `leak`.
"""
import os
import random
import sys
import threading

import gpuleak

STEPS = 40


def cupy_step(cp, rng, history, keep):
    made = {}

    def work():  # on another thread: the allocations' frames are this thread's
        made["batch"] = cp.ones(1 << 18)
        made["temps"] = [cp.ones(rng.randrange(1, 9) << 16) for _ in range(rng.randrange(0, 4))]
        made["loss"] = cp.ones(1 << 20)  # @cupy_loss

    t = threading.Thread(target=work)
    t.start()
    t.join()
    if keep:
        history.append(made["loss"])
    made.clear()  # the batch, the temporaries (and the loss when clean) are freed here


def jax_step(jnp, rng, history, keep):
    batch = jnp.ones(1 << 18)
    temps = [jnp.ones(rng.randrange(1, 9) << 16) for _ in range(rng.randrange(0, 4))]
    loss = jnp.ones(4 << 20)  # @jax_loss
    del batch, temps
    if keep:
        history.append(loss)


def jax_oom(jnp):
    kept = []
    try:
        for _ in gpuleak.iterate(range(STEPS), loop="train"):
            kept.append(jnp.ones(4 << 20))  # @jax_keep
    except jnp.errors.JaxRuntimeError as e:
        print("caught:", str(e).split(":")[0])


def main(framework, mode):
    rng = random.Random(5)
    history = []
    if framework == "cupy":
        import cupy
        if mode == "async":
            cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)
        weights = cupy.ones(8 << 20)
        for _ in gpuleak.iterate(range(STEPS), loop="train"):
            cupy_step(cupy, rng, history, mode != "clean")
    else:
        import jax
        if mode == "oom":
            return jax_oom(jax)
        weights = jax.ones(8 << 20)
        for _ in gpuleak.iterate(range(STEPS), loop="train"):
            jax_step(jax, rng, history, mode == "leak")
    del weights
    print("steps:", STEPS, "kept:", len(history), "pid:", os.getpid())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
