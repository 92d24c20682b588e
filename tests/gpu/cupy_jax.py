#!/usr/bin/env python3
"""Other frameworks under gpuleak (optional cases of the matrix).

    cupy_jax.py cupy   CuPy with its default memory pool: 5 arrays of different sizes, freed,
                       then pool.free_all_blocks(). The pool asks the driver for each (rounded)
                       size once and gives the blocks back at free_all_blocks():
                       EXPECT allocs>=5 frees>=5.
    cupy_jax.py jax    JAX with XLA_PYTHON_CLIENT_ALLOCATOR=platform (set by the caller; no
                       preallocated arena): a few jnp arrays and a jit'ed function;
                       EXPECT allocs>=1 (XLA allocates through the driver API).
Prints "SKIPPED: ..." on its first line (and exits 0) when the framework is not importable.
"""
import os
import sys


def run_cupy():
    try:
        import cupy as cp
    except Exception as e:  # noqa: BLE001 - ImportError or a broken CUDA setup
        print(f"SKIPPED: cupy not installed ({type(e).__name__}: {e})")
        return 0
    pool = cp.get_default_memory_pool()
    sizes = [1 << 20, 3 << 20, 5 << 20, 7 << 20, 9 << 20]
    arrays = [cp.zeros(n // 4, dtype=cp.float32) for n in sizes]
    total = float(sum(float(x.sum()) for x in arrays))
    cp.cuda.Device(0).synchronize()
    used = pool.used_bytes()
    del arrays
    pool.free_all_blocks()
    cp.cuda.Device(0).synchronize()
    print(f"CUPY arrays={len(sizes)} used_bytes={used} after_free={pool.total_bytes()} sum={total} "
          f"cupy={cp.__version__}")
    print(f"EXPECT allocs>={len(sizes)} frees>={len(sizes)}")
    return 0


def run_jax():
    if os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR") != "platform":
        print("note: XLA_PYTHON_CLIENT_ALLOCATOR is not 'platform': JAX preallocates one arena")
    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:  # noqa: BLE001
        print(f"SKIPPED: jax not installed ({type(e).__name__}: {e})")
        return 0
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        print(f"SKIPPED: jax sees no GPU (devices: {jax.devices()})")
        return 0
    f = jax.jit(lambda a, b: jnp.tanh(a @ b).sum())
    keep = []
    for i in range(5):
        a = jnp.ones((512 + 64 * i, 512), dtype=jnp.float32)
        b = jnp.ones((512, 256), dtype=jnp.float32)
        keep.append(f(a, b).block_until_ready())
    print(f"JAX results={[float(x) for x in keep][:2]} jax={jax.__version__} devices={gpus}")
    print("EXPECT allocs>=1")
    return 0


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else ""
    if which == "cupy":
        return run_cupy()
    if which == "jax":
        return run_jax()
    print("usage: cupy_jax.py cupy|jax", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
