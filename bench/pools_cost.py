#!/usr/bin/env python3
"""What gpuleak's per-object view of CuPy's pool and JAX's arena costs a training-style step
(issue #27), plain against gpuleak in one run (docs/benchmarks.md has the method and results).

    bench/pools_cost.py --framework cupy|jax|both --gpuleak BUILD/bin/gpuleak [--steps 200]
                        [--arrays 1000] [--live 200] [--repeat 3] [--json FILE]

Runs this file's --child loop as four variants, alternating, --repeat times each:
  plain     python, no gpuleak;
  floor     python, no gpuleak, with the least a per-object view must do and nothing reported: CuPy's
            pool behind a cupy.cuda.PythonFunctionAllocator that keeps each array's MemoryPointer
            until its free (the hook gpuleak uses, the only global one); JAX's jax.live_arrays()
            listed once per step. What gpuleak adds over it is what its own reporting costs;
  shim      `gpuleak run --cupy segments` / `--jax segments`: the shim alone (CuPy's pool chunks,
            JAX's arena; no per-object view);
  default   `gpuleak run` with no option: CuPy's arrays through the allocator wrapper, JAX's live
            arrays sampled at every boundary (the mode this issue adds);
and prints the median step time of each, the overhead per step of `default` over `plain` (in
microseconds and as a share of the step, against the issue's goal), the floor's own share over
`plain` and gpuleak's over the floor.
`both` measures CuPy, then JAX (a framework that does not import is said and skipped); --json
writes the figures. scripts/gpu-session.sh's `pools_cost` stage runs `--framework both`. The CuPy step makes --arrays arrays (each one elementwise op on a 256 KiB array, freed at
once) and keeps none; the JAX step runs one jitted update over --live parameter arrays (every
parameter replaced, the new ones reported and the old ones gone at each boundary: the worst case
for the sampler) between gpuleak.iterate boundaries.

Without a GPU, PYTHONPATH may point at stand-ins (tests/python_frames/fake_frameworks/site-packages
with PYFRAMES_CUDART and the fake CUDA on LD_LIBRARY_PATH): then the step is only the framework's
host-side bookkeeping, and the share is an upper bound of what a real step pays.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


class SkipFramework(Exception):
    pass


def child(a):
    try:
        import gpuleak
    except ImportError:  # the plain variant, run from a checkout: the package of this tree
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "python"))
        import gpuleak
    times = []
    try:
        __import__(a.framework)
    except ImportError as e:
        print("%s not importable (%s)" % (a.framework, e))
        sys.exit(77)
    if a.framework == "cupy":
        import cupy as cp
        if a.floor:
            install_cupy_floor(cp)
        base = cp.ones(1 << 16, dtype=cp.float32) if hasattr(cp, "float32") else cp.ones(1 << 18)
        real = hasattr(cp, "float32")

        def step():
            for _ in range(a.arrays):
                y = base * 2.0 if real else cp.ones(1 << 18)
                del y
            if real:
                cp.cuda.Device(0).synchronize()
    else:
        import jax
        real = hasattr(jax, "jit") and hasattr(jax, "devices")  # the stand-ins have one or neither
        if real:
            import jax.numpy as jnp
            params = [jnp.ones((256, 256), dtype=jnp.float32) for _ in range(a.live)]
            update = jax.jit(lambda ps: [p * 0.999 + 0.001 for p in ps])
        else:
            params = [jax.ones(1 << 18) for _ in range(a.live)]
        state = {"params": params}

        def step():
            if real:
                state["params"] = update(state["params"])
                state["params"][0].block_until_ready()
            else:
                # No Python loop in the step, as in the real one (a jitted call): a loop here
                # would be an observed level of its own.
                state["params"] = list(map(lambda _: jax.ones(1 << 18), range(a.live)))
    listed = []

    def list_live():  # the JAX floor: what any sampler of the live arrays pays at a boundary
        listed[:] = [id(x) for x in jax.live_arrays()]

    boundary = list_live if a.floor and a.framework == "jax" else (lambda: None)
    loop = iter(gpuleak.iterate(range(a.steps + a.warmup), loop="train"))
    # A step's time runs from one pass's start to the next's: what gpuleak does at the loop's own
    # back edge (the observer's pass, the sample it takes there) counts too.
    starts = []
    for i in range(a.steps + a.warmup):
        starts.append(time.perf_counter())
        next(loop)
        step()
        boundary()
    starts.append(time.perf_counter())
    for _ in loop:
        pass
    times = [b - e for e, b in zip(starts, starts[1:])]
    return times[a.warmup:]


def install_cupy_floor(cp):
    """CuPy's default pool behind a PythonFunctionAllocator that only keeps each block until its free."""
    pool, live = cp.get_default_memory_pool(), {}
    pool_malloc = pool.malloc

    def malloc(size, device_id):
        memory = pool_malloc(size)
        live[memory.ptr] = memory
        return memory.ptr

    def free(address, device_id):
        live.pop(address, None)

    cp.cuda.set_allocator(cp.cuda.PythonFunctionAllocator(malloc, free).malloc)


def run_variant(a, variant, out):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--framework", a.framework, "--steps", str(a.steps),
           "--arrays", str(a.arrays), "--live", str(a.live), "--warmup", str(a.warmup), "--json", out]
    if variant == "floor":
        cmd.append("--floor")
    if variant not in ("plain", "floor"):  # gpuleak run (default-ref: with --ref-pythondir's package)
        extra = ["--%s" % a.framework, "segments"] if variant == "shim" else []
        cmd = [a.gpuleak, "run", "--quiet", "--no-report", "--out", os.path.dirname(out)] + extra + ["--"] + cmd
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("GPULEAK_") and k not in ("GPULEAK_LIB", "GPULEAK_PYTHONDIR"):
            del env[k]
    if variant == "default-ref":
        env["GPULEAK_PYTHONDIR"] = a.ref_pythondir
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode == 77:
        raise SkipFramework(p.stdout.strip() or p.stderr.strip()[-300:])
    if p.returncode != 0:
        raise SystemExit("%s failed (%d): %s" % (variant, p.returncode, p.stderr[-2000:]))
    with open(out) as f:
        return json.load(f)


def measure(a, framework):
    """The three variants of one framework, alternating, --repeat times; prints and returns the result."""
    b = argparse.Namespace(**vars(a))
    b.framework = framework
    medians = {"plain": [], "floor": [], "shim": [], "default": []}
    if b.ref_pythondir:
        medians["default-ref"] = []
    with tempfile.TemporaryDirectory(prefix="gpuleak-pools-cost-") as tmp:
        for r in range(b.repeat):
            for variant in medians:
                sub = os.path.join(tmp, "%s-%d" % (variant, r))
                os.mkdir(sub)
                medians[variant].append(statistics.median(run_variant(b, variant, os.path.join(sub, "t.json"))))
    m = {k: statistics.median(v) for k, v in medians.items()}
    unit = "array" if framework == "cupy" else "step"
    per = b.arrays if framework == "cupy" else 1
    print("%s: %d steps x %d repeats; %s" % (framework, b.steps, b.repeat,
                                            ("%d arrays a step" % b.arrays) if framework == "cupy"
                                            else ("%d parameters replaced a step" % b.live)))
    for k, v in m.items():
        print("  %-8s median step %9.1f us  (%.3f us per %s; runs %s)" % (
            k, v * 1e6, v * 1e6 / per, unit, ", ".join("%.1f" % (x * 1e6) for x in medians[k])))
    added = m["default"] - m["plain"]
    print("  overhead per step: %+.1f us, %+.1f %% of a step (goal: at most %d %%); over the shim alone: %+.1f %%" % (
        added * 1e6, 100 * (m["default"] / m["plain"] - 1), 5 if framework == "cupy" else 2,
        100 * (m["default"] / m["shim"] - 1)))
    print("  the floor (the hook alone, nothing reported): %+.1f us, %+.1f %% of a step; gpuleak over the floor: "
          "%+.1f us, %+.1f %%" % ((m["floor"] - m["plain"]) * 1e6, 100 * (m["floor"] / m["plain"] - 1),
                                  (m["default"] - m["floor"]) * 1e6, 100 * (m["default"] / m["floor"] - 1)))
    return {"framework": framework, "medians_s": m, "runs_s": medians, "overhead_s": added,
            "overhead_share": m["default"] / m["plain"] - 1}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--framework", choices=("cupy", "jax", "both"), required=True)
    ap.add_argument("--gpuleak", default="")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--arrays", type=int, default=1000)
    ap.add_argument("--live", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--floor", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ref-pythondir", default="",
                    help="another gpuleak Python package (its folder): a `default-ref` variant runs with it")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    if a.child:
        with open(a.json, "w") as f:
            json.dump(child(a), f)
        return 0
    if not a.gpuleak:
        ap.error("--gpuleak BUILD/bin/gpuleak is needed")
    results = []
    for framework in (("cupy", "jax") if a.framework == "both" else (a.framework,)):
        try:
            results.append(measure(a, framework))
        except SkipFramework as e:
            print("%s: SKIPPED (%s)" % (framework, e))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
