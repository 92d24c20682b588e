#!/usr/bin/env python3
"""The loop shapes of issue #26 on a real GPU, with no marks, for run_observed_loops.sh:

  observed_loops.py --shape jax_step|torch_oom|torch_serve --leak|--clean --result FILE

  jax_step     one jitted call per step, the loop body's only allocating line:
               `params, loss, h = step(params, x)`; --leak keeps each step's 4 MiB activation `h`
               (run with XLA_PYTHON_CLIENT_ALLOCATOR=platform, or `gpuleak run --jax per-buffer`);
  torch_oom    `while True:` inference keeping each step's output with its graph until
               torch.cuda.OutOfMemoryError (the process limited to a share of the device), then a
               break; --clean stops after STEPS steps keeping nothing;
  torch_serve  REQUESTS requests, each decoding TOKENS tokens over LAYERS layers; --leak keeps each
               request's KV cache (the request loop is the iteration: bytes per request);
  torch_train_eval  (issue #33) a clean training loop, then an evaluation loop; --leak keeps each
               evaluation step's output until evaluate() returns (the growth is released when it
               returns, and is still the evaluation loop's leak);
  torch_threads  (issue #33) a handler called on a pool of 4 worker threads
               (ThreadPoolExecutor.map) for REQUESTS requests; --leak keeps one tensor per call
               (bytes per request).

The program measures what it keeps itself and writes FILE as framework_loops.py does, for
check_framework_case.py: {"framework", "mode", "file", "keep_line" (the `# @keep-SHAPE` line),
"kept_bytes_per_step" (per request for torch_serve; 0 when clean), "steps", "version", "note"}.
Prints "SKIPPED: ..." and exits 0 when the framework is missing or sees no GPU.
"""
import argparse
import json
import os
import sys

STEPS = 40
REQUESTS = 24
TOKENS = 16
LAYERS = 4
_KEPT = []


def keep_line(shape):
    with open(__file__, encoding="utf-8") as f:
        hits = [i + 1 for i, text in enumerate(f) if text.rstrip().endswith("# @keep-" + shape)]
    if len(hits) != 1:
        raise SystemExit(f"observed_loops.py: {len(hits)} @keep-{shape} lines (expected 1)")
    return hits[0]


def run_jax_step(a):
    import jax
    import jax.numpy as jnp
    if not [d for d in jax.devices() if d.platform == "gpu"]:
        return None, f"jax sees no GPU ({jax.devices()})", 0

    @jax.jit
    def step(params, x):
        h = jnp.tanh(x @ params)  # (1024, 1024) float32: 4 MiB
        loss = jnp.mean(h * h)
        return params - 1e-3 * jnp.mean(h) * params, loss, h

    params = jnp.ones((1024, 1024), jnp.float32) * 0.01
    x = jnp.ones((1024, 1024), jnp.float32)
    kept = 0
    for i in range(STEPS):
        params, loss, h = step(params, x + i); _KEPT.append(h) if a.leak else None  # @keep-jax_step
    if a.leak:
        kept = _KEPT[-1].nbytes
        _KEPT[-1].block_until_ready()
    return kept, f"jax {jax.__version__} allocator={os.environ.get('XLA_PYTHON_CLIENT_ALLOCATOR', '')!r}", STEPS


def run_torch_oom(a):
    import torch
    if not torch.cuda.is_available():
        return None, "torch sees no CUDA device", 0
    dev = torch.device("cuda", 0)
    torch.cuda.set_per_process_memory_fraction(0.05, 0)  # about 7 GiB of an H200: an OOM in seconds
    model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.GELU()).to(dev)
    x = torch.randn(2048, 4096, device=dev, requires_grad=True)
    kept = 0
    steps = 0
    while True:
        try:
            out = model(x)  # @keep-torch_oom
        except torch.cuda.OutOfMemoryError:
            break
        steps += 1
        if a.leak:
            _KEPT.append(out)  # the output and its graph stay alive
            kept = out.numel() * out.element_size() * 2  # the output and GELU's saved input
        elif steps == STEPS:
            break
    torch.cuda.synchronize()
    return kept, f"torch {torch.__version__}", steps


def run_torch_serve(a):
    import torch
    if not torch.cuda.is_available():
        return None, "torch sees no CUDA device", 0
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    layers = [torch.nn.Linear(1024, 1024).to(dev) for _ in range(LAYERS)]
    kept = 0
    with torch.no_grad():
        for r in range(REQUESTS):
            cache = torch.empty(LAYERS, TOKENS, 64, 1024, device=dev)  # @keep-torch_serve
            h = torch.randn(64, 1024, device=dev)
            for t in range(TOKENS):
                for i, layer in enumerate(layers):
                    h = torch.tanh(layer(h))
                    cache[i, t].copy_(h)
            if a.leak:
                _KEPT.append(cache)
                kept = cache.numel() * cache.element_size()
            del cache
    torch.cuda.synchronize()
    return kept, f"torch {torch.__version__}", REQUESTS


def run_torch_train_eval(a):
    import torch
    if not torch.cuda.is_available():
        return None, "torch sees no CUDA device", 0
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = torch.nn.Linear(1024, 1024).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device=dev)
    for _ in range(STEPS):
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    def evaluate():
        outputs = []
        with torch.no_grad():
            for i in range(STEPS):
                out = model(x + i)  # @keep-torch_train_eval
                if a.leak:
                    outputs.append(out)
        kept = outputs[-1].numel() * outputs[-1].element_size() if outputs else 0
        outputs.clear()  # released when evaluate() returns
        return kept

    kept = evaluate()
    torch.cuda.synchronize()
    return kept, f"torch {torch.__version__}", STEPS


def run_torch_threads(a):
    import concurrent.futures
    import threading
    import torch
    if not torch.cuda.is_available():
        return None, "torch sees no CUDA device", 0
    dev = torch.device("cuda", 0)
    weight = torch.randn(1024, 1024, device=dev)
    lock = threading.Lock()
    sizes = []

    def handle(request):
        with torch.no_grad():
            h = torch.randn(128, 1024, device=dev)
            for _ in range(3):
                h = torch.tanh(h @ weight)
            answer = h.sum(dim=0)  # @keep-torch_threads
            if a.leak:
                with lock:
                    _KEPT.append(answer)
                    sizes.append(answer.numel() * answer.element_size())
            torch.cuda.current_stream().synchronize()
        return request

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(handle, range(REQUESTS * 2)))
    torch.cuda.synchronize()
    # The caching allocator rounds a block up to 512 bytes: the bytes kept per request.
    kept = ((sizes[0] + 511) // 512) * 512 if sizes else 0
    return kept, f"torch {torch.__version__}", REQUESTS * 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", required=True,
                    choices=("jax_step", "torch_oom", "torch_serve", "torch_train_eval", "torch_threads"))
    kind = ap.add_mutually_exclusive_group(required=True)
    kind.add_argument("--leak", dest="leak", action="store_true")
    kind.add_argument("--clean", dest="leak", action="store_false")
    ap.add_argument("--result", required=True)
    a = ap.parse_args()
    framework = a.shape.split("_")[0]
    result = {"framework": framework, "shape": a.shape, "mode": "leak" if a.leak else "clean", "marks": False,
              "file": os.path.abspath(__file__), "keep_line": keep_line(a.shape)}
    try:
        kept, note, steps = {"jax_step": run_jax_step, "torch_oom": run_torch_oom,
                             "torch_serve": run_torch_serve, "torch_train_eval": run_torch_train_eval,
                             "torch_threads": run_torch_threads}[a.shape](a)
    except ImportError as e:
        kept, note, steps = None, f"{framework} not importable ({e})", 0
    if kept is None:
        result["skipped"] = note
        print(f"SKIPPED: {note}")
    else:
        result.update(kept_bytes_per_step=kept, version=note, steps=steps, kept_objects=len(_KEPT))
        print(f"OBSERVED_LOOP {json.dumps(result)}")
    with open(a.result, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
