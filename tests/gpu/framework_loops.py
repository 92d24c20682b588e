#!/usr/bin/env python3
"""A training-style loop in PyTorch, JAX or CuPy for run_frameworks.sh (issue 13 item 5).

  framework_loops.py --framework torch|jax|cupy --leak|--clean --marks|--no-marks
                     --result FILE [--steps N]

Each step does some work whose arrays die in the step, then either keeps one array on the GPU
(--leak: the line marked `# @keep-FRAMEWORK`, a list that grows by one array per step) or keeps a Python
float (--clean: nothing stays on the GPU). The program measures what it keeps itself, from the
framework's own array (nbytes / numel * element_size), and writes FILE, JSON:

  {"framework", "mode", "marks", "steps", "file" (this file), "keep_line" (that line),
   "kept_bytes_per_step" (0 when clean), "version", "note", and for torch "torch_snapshot": segments,
   reserved_bytes, active_bytes and kept_blocks from torch.cuda.memory._snapshot() at the loop's end}

--marks: each step is an iteration (torch: an NVTX range "step"; jax, cupy: gpuleak.iterate()).
--no-marks: nothing marks the steps; gpuleak must find the loop from the Python frames.
JAX's steps allocate differently each time (a data-dependent batch size and a random extra op), the
irregular case. Prints "SKIPPED: ..." and exits 0 when the framework is missing or sees no GPU; the
result file then holds {"skipped": reason}.
"""
import argparse
import contextlib
import json
import os
import random
import sys

KEEP_BYTES = 4 << 20  # the array kept per step: 4 MiB (1M float32)
_KEPT = []
_SNAPSHOT = {}  # torch only: torch.cuda.memory._snapshot() at the loop's end


def keep_line(framework):
    """The line of this file ending in `# @keep-FRAMEWORK` (the one gpuleak must name)."""
    with open(__file__, encoding="utf-8") as f:
        hits = [i + 1 for i, text in enumerate(f) if text.rstrip().endswith("# @keep-" + framework)]
    if len(hits) != 1:
        raise SystemExit(f"framework_loops.py: {len(hits)} @keep-{framework} lines (expected 1)")
    return hits[0]


def steps(n, marks):
    """The loop's steps; with marks each is a gpuleak iteration (a no-op without gpuleak)."""
    if not marks:
        return range(n)
    import gpuleak  # main() checked it is importable
    return gpuleak.iterate(range(n), loop="train")


# ---- PyTorch: a small MLP trained on random batches; the leak keeps an activation --------------
def run_torch(a):
    import torch
    if not torch.cuda.is_available():
        return None, "torch sees no CUDA device"
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 1024)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    kept_bytes = 0
    for _ in range(a.steps):
        rng = torch.cuda.nvtx.range("step") if a.marks else contextlib.nullcontext()
        with rng:
            x = torch.randn(1024, 1024, device=dev)
            out = model(x)
            loss = out.square().mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if a.leak:
                _KEPT.append(torch.tanh(out.detach()))  # @keep-torch
                kept_bytes = _KEPT[-1].numel() * _KEPT[-1].element_size()
            else:
                _KEPT.append(loss.item())
            torch.cuda.synchronize()
    # PyTorch's own view of the same moment (issue 14): the caching allocator's segments and the
    # blocks in use, for check_framework_case.py to hold the report's segment and tensor figures to.
    # Only for the caching allocator itself (not backend:cudaMallocAsync, not no-caching).
    if torch.cuda.get_allocator_backend() != "native" or os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1":
        return kept_bytes, f"torch {torch.__version__}"
    snap = torch.cuda.memory._snapshot()
    segs = [s for s in snap.get("segments", []) if s.get("device") == 0]
    _SNAPSHOT.update(segments=len(segs), reserved_bytes=sum(s["total_size"] for s in segs),
                     active_bytes=sum(b["size"] for s in segs for b in s["blocks"] if b["state"] == "active_allocated"),
                     kept_blocks=sum(1 for s in segs for b in s["blocks"]
                                     if b["state"] == "active_allocated" and b["size"] == kept_bytes))
    return kept_bytes, f"torch {torch.__version__}"


# ---- JAX: data-dependent batch sizes, a random extra op; the leak keeps a fixed-size array -------
def run_jax(a):
    import jax
    import jax.numpy as jnp
    if not [d for d in jax.devices() if d.platform == "gpu"]:
        return None, f"jax sees no GPU ({jax.devices()})"
    rng = random.Random(13)
    w = jnp.ones((512, 512), dtype=jnp.float32) * 0.01
    base = jnp.ones((1024, 1024), dtype=jnp.float32)
    kept_bytes = 0
    for step in steps(a.steps, a.marks):
        n = rng.choice((128, 384, 640, 896))  # the step's batch: a different shape, other buffers
        h = jnp.tanh(jnp.ones((n, 512), dtype=jnp.float32) @ w)
        if rng.random() < 0.5:
            h = jnp.concatenate([h, h * 2.0])  # sometimes one more, larger buffer
        total = float(h.sum())
        if a.leak:
            _KEPT.append(jnp.sin(base + step))  # @keep-jax
            kept_bytes = _KEPT[-1].nbytes
            _KEPT[-1].block_until_ready()
        else:
            _KEPT.append(total)
        del h
    return kept_bytes, f"jax {jax.__version__} allocator={os.environ.get('XLA_PYTHON_CLIENT_ALLOCATOR', '')!r}"


# ---- CuPy: elementwise work on random sizes; the leak keeps one array per step ------------------
def run_cupy(a):
    import cupy as cp  # ImportError: main() says the framework is missing
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - cupy present but no CUDA device / driver
        return None, f"cupy sees no GPU ({type(e).__name__}: {e})"
    if os.environ.get("FRAMEWORK_LOOPS_CUPY_ASYNC") == "1":  # the program's own choice of pool
        cp.cuda.set_allocator(cp.cuda.MemoryAsyncPool().malloc)
    threads = os.environ.get("FRAMEWORK_LOOPS_THREADS") == "1"
    rng = random.Random(5)
    base = cp.ones(KEEP_BYTES // 4, dtype=cp.float32)
    kept_bytes = 0

    def body(step, made):
        x = cp.random.random(rng.choice((1, 2, 3)) << 18, dtype=cp.float32)
        made["total"] = float((x * 2.0).sum())
        made["x"] = x
        if a.leak:
            made["keep"] = cp.sin(base + step)  # @keep-cupy
        cp.cuda.Device(0).synchronize()

    for step in steps(a.steps, a.marks):
        made = {}
        if threads:  # a worker thread allocates; this thread drops the arrays (cross-thread frees)
            import threading
            t = threading.Thread(target=body, args=(step, made))
            t.start()
            t.join()
        else:
            body(step, made)
        if a.leak:
            _KEPT.append(made["keep"])
            kept_bytes = _KEPT[-1].nbytes
        else:
            _KEPT.append(made["total"])
        made.clear()
    cp.cuda.Device(0).synchronize()
    return kept_bytes, f"cupy {cp.__version__} GPULEAK_CUPY={os.environ.get('GPULEAK_CUPY', 'default')!r} " \
                       f"threads={threads}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--framework", required=True, choices=("torch", "jax", "cupy"))
    kind = ap.add_mutually_exclusive_group(required=True)
    kind.add_argument("--leak", dest="leak", action="store_true")
    kind.add_argument("--clean", dest="leak", action="store_false")
    marks = ap.add_mutually_exclusive_group(required=True)
    marks.add_argument("--marks", dest="marks", action="store_true")
    marks.add_argument("--no-marks", dest="marks", action="store_false")
    ap.add_argument("--result", required=True)
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    if a.marks and a.framework != "torch":
        try:
            import gpuleak  # noqa: F401 - the marks; run_frameworks.sh puts tools/python on PYTHONPATH
        except ImportError as e:
            print(f"framework_loops.py: --marks needs gpuleak's Python package ({e})", file=sys.stderr)
            return 2
    result = {"framework": a.framework, "mode": "leak" if a.leak else "clean", "marks": a.marks,
              "steps": a.steps, "file": os.path.abspath(__file__), "keep_line": keep_line(a.framework)}
    try:
        kept, note = {"torch": run_torch, "jax": run_jax, "cupy": run_cupy}[a.framework](a)
    except ImportError as e:
        kept, note = None, f"{a.framework} not importable ({e})"
    if kept is None:
        result["skipped"] = note
        print(f"SKIPPED: {note}")
    else:
        result.update(kept_bytes_per_step=kept, version=note, kept_objects=len(_KEPT))
        if _SNAPSHOT:
            result["torch_snapshot"] = _SNAPSHOT
        print(f"FRAMEWORK_LOOP {json.dumps(result)}")
    with open(a.result, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
