#!/usr/bin/env python3
"""Where JAX's live-array sampler spends its time, per array, on a real JAX (issue #27):

    bench/jax_sample_parts.py [--live 200] [--rounds 50] [--pythondir DIR ...]

Makes --live parameter arrays replaced by one jitted update per round (the pools_cost.py step),
then times, per array of a listing, each accessor the sampler may call (jaxlib's C++ ones and
jax's Python properties), and a whole Sampler.sample() of freshly replaced arrays with a shim that
records nothing, for gpuleak's package in each --pythondir (default: this tree's). Prints
microseconds per array, the lowest of --rounds. Needs JAX with a GPU; exits 77 without JAX.
"""
import argparse
import importlib
import os
import sys
import time
import weakref


def per_array(fn, items, rounds):
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for x in items:
            fn(x)
        best = min(best, time.perf_counter() - t0)
    return best / max(1, len(items)) * 1e6


class NullShim:
    def objects(self, words):
        pass

    def frames(self, n, files, functions, lines):
        return 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--live", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--pythondir", action="append", default=[])
    a = ap.parse_args()
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as e:
        print("jax not importable (%s)" % e)
        return 77
    params = [jnp.ones((256, 256), dtype=jnp.float32) for _ in range(a.live)]
    update = jax.jit(lambda ps: [p * 0.999 + 0.001 for p in ps])
    params = update(params)
    params[0].block_until_ready()
    live = jax.live_arrays()
    print("jax %s, %d live arrays, device %s" % (jax.__version__, len(live), live[0].devices()))
    t0 = time.perf_counter()
    for _ in range(a.rounds):
        jax.live_arrays()
    print("%-34s %8.3f us per array" % ("jax.live_arrays()", (time.perf_counter() - t0) / a.rounds / len(live) * 1e6))
    parts = [
        ("array.sharding", lambda x: x.sharding),
        ("sharding.device_set", lambda x: x.sharding.device_set),
        ("array.unsafe_buffer_pointer()", lambda x: x.unsafe_buffer_pointer()),
        ("array.on_device_size_in_bytes()", lambda x: x.on_device_size_in_bytes()),
        ("array.nbytes", lambda x: x.nbytes),
        ("array.devices()", lambda x: x.devices()),
        ("array.is_deleted()", lambda x: x.is_deleted()),
        ("array.traceback", lambda x: x.traceback),
        ("array.aval", lambda x: x.aval),
        ("array.shape", lambda x: x.shape),
        ("array.dtype", lambda x: x.dtype),
        ("weakref.ref(array)", weakref.ref),
        ("id(array)", id),
        ("object.__hash__(array)", object.__hash__),
    ]
    for name, fn in parts:
        try:
            print("%-34s %8.3f us per array" % (name, per_array(fn, live, a.rounds)))
        except Exception as e:
            print("%-34s failed: %s" % (name, e))
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "python")
    for pythondir in a.pythondir or [here]:
        for k in [k for k in sys.modules if k == "gpuleak" or k.startswith("gpuleak.")]:
            del sys.modules[k]
        sys.path.insert(0, pythondir)
        try:
            _jax = importlib.import_module("gpuleak._jax")
        finally:
            sys.path.remove(pythondir)
        sampler = _jax.Sampler(jax, NullShim())
        sampler.sample()
        best_new = best_same = float("inf")
        for _ in range(a.rounds):
            params = update(params)
            params[0].block_until_ready()
            t0 = time.perf_counter()
            sampler.sample()  # every parameter new, the old ones gone
            t1 = time.perf_counter()
            sampler.sample()  # nothing new
            t2 = time.perf_counter()
            best_new, best_same = min(best_new, t1 - t0), min(best_same, t2 - t1)
        n = len(params)
        print("Sampler.sample() [%s]: %.3f us per replaced array, %.3f us per unchanged array"
              % (pythondir, best_new / n * 1e6, best_same / n * 1e6))
        if pythondir == (a.pythondir or [here])[-1]:
            params = breakdown(jax, _jax, update, params, a.rounds)
    return 0


def breakdown(jax, _jax, update, params, rounds):
    """The sample of replaced arrays with one part at a time stubbed out: what each part costs."""
    n = len(params)

    def replaced(fn):
        nonlocal params
        best = float("inf")
        for _ in range(rounds):
            params = update(params)
            params[0].block_until_ready()
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        return best / n * 1e6

    print("%-34s %8.3f us per replaced array" % ("live_arrays() after a replace", replaced(jax.live_arrays)))

    def listed():
        for x in jax.live_arrays():
            pass
    print("%-34s %8.3f us per replaced array" % ("live_arrays() iterated", replaced(listed)))
    def placed(self, array):
        return (_jax.NEW, id(array), 4096, 0), (_jax.GONE, id(array), 0, 0)
    stubs = [
        ("nothing stubbed", {}),
        ("site() stubbed", {"site": lambda self, array: 0}),
        ("_place() stubbed", {"_place": placed}),
    ]
    for name, patch in stubs:
        cls = type("Stubbed", (_jax.Sampler,), patch)
        sampler = cls(jax, NullShim())
        sampler.sample()
        print("%-34s %8.3f us per replaced array" % ("sample(), " + name, replaced(sampler.sample)))
    sampler = _jax.Sampler(jax, NullShim())
    sampler.sample()
    live = jax.live_arrays()
    seen = {id(x): (weakref.ref(x), None) for x in live}

    def unchanged_loop():
        now = {}
        for x in live:
            key = id(x)
            entry = seen.get(key)
            if entry is not None and entry[0]() is x:
                now[key] = entry
    for name, fn in (("sample(), nothing new", sampler.sample), ("live_arrays()", jax.live_arrays),
                     ("id() of each", lambda: [id(x) for x in live]),
                     ("the unchanged arrays' loop", unchanged_loop)):
        best = float("inf")
        for _ in range(rounds):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        print("%-34s %8.3f us per unchanged array" % (name, best / len(live) * 1e6))
    del live, seen
    tbs = [x.traceback for x in params]  # held, so that no id is reused
    print("tracebacks of one jitted call's %d outputs: %d distinct objects; one array's twice the same object: %s"
          % (n, len({id(t) for t in tbs}), params[0].traceback is params[0].traceback))
    del tbs
    before = [(x.aval, x.sharding) for x in params]
    params = update(params)
    after = [(x.aval, x.sharding) for x in params]
    print("one replace: the same aval object %d of %d, the same sharding object %d of %d, avals distinct: %d"
          % (sum(a[0] is b[0] for a, b in zip(before, after)), n, sum(a[1] is b[1] for a, b in zip(before, after)), n,
             len({id(a[0]) for a in after})))
    del before, after
    sampler.device_sizes = True
    for name, fn in (("site(array), warm", sampler.site), ("_place(array), warm", sampler._place)):
        print("%-34s %8.3f us per replaced array" % (name, replaced(lambda: [fn(x) for x in params])))
    return params


if __name__ == "__main__":
    sys.exit(main())
