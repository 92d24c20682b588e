#!/usr/bin/env python3
"""JAX cases of issue 27 that the framework loops do not cover, for run_pools.sh.

  jax_pools.py oom --result FILE
      Default allocator (the arena; the caller sets XLA_PYTHON_CLIENT_MEM_FRACTION small so that it
      fills in a few steps). Each step keeps a 256 MiB array (the `# @keep-oom` line) until XLA raises
      RESOURCE_EXHAUSTED, which the program catches; then it goes on and exits 0.
  jax_pools.py per-buffer --result FILE
      Under `gpuleak run --jax per-buffer`: a 64 MiB array made and deleted at each of 10 marked
      steps (`# @freed`), so that every buffer must be freed (the report: clean, no device memory of
      that site live at exit).
FILE gets {"mode", "file", "line", "caught", "allocator", "version"} or {"skipped": why}; the oom mode
adds "kept" (arrays kept) and "steps" (the arena's [bytes_limit, bytes_in_use] after each completed step,
from memory_stats()).
"""
import argparse
import json
import os
import sys


def line_of(tag):
    with open(__file__, encoding="utf-8") as f:
        return next(i + 1 for i, t in enumerate(f) if t.rstrip().endswith("# @" + tag))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("oom", "per-buffer"))
    ap.add_argument("--result", required=True)
    a = ap.parse_args()
    out = {"mode": a.mode, "file": os.path.abspath(__file__)}
    try:
        import jax
        import jax.numpy as jnp
        if not [d for d in jax.devices() if d.platform == "gpu"]:
            raise RuntimeError("jax sees no GPU")
    except Exception as e:  # noqa: BLE001
        out["skipped"] = "%s: %s" % (type(e).__name__, e)
        print("SKIPPED:", out["skipped"])
    else:
        import gpuleak
        out["version"] = jax.__version__
        out["allocator"] = os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "")
        if a.mode == "oom":
            out["line"] = line_of("keep-oom")
            kept, caught, steps = [], "", []  # steps: the arena's (limit, in use) after each step
            try:
                for step in gpuleak.iterate(range(1000), loop="train"):
                    kept.append(jnp.full((64 << 20,), float(step), dtype=jnp.float32))  # @keep-oom
                    kept[-1].block_until_ready()
                    stats = jax.devices()[0].memory_stats() or {}
                    steps.append([stats.get("bytes_limit", 0), stats.get("bytes_in_use", 0)])
            except Exception as e:  # noqa: BLE001 - the program catches XLA's error and goes on
                caught = "%s: %s" % (type(e).__name__, str(e)[:300])
            out["caught"] = caught
            out["kept"] = len(kept)
            out["steps"] = steps
            del kept
        else:
            out["line"] = line_of("freed")
            out["array_bytes"] = (16 << 20) * 4
            for step in gpuleak.iterate(range(10), loop="train"):
                x = jnp.full((16 << 20,), float(step), dtype=jnp.float32)  # @freed
                x.block_until_ready()
                x.delete()
                del x
    with open(a.result, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
    print("JAX_POOLS", json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
