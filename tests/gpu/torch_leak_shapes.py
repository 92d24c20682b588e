#!/usr/bin/env python3
"""Three shapes of a PyTorch training loop, for run_leak_shapes.sh: what gpuleak must say of each.

  torch_leak_shapes.py graph    keeps, every step, a tensor that holds its autograd graph: the
                                output of an extra forward pass that is never backpropagated,
                                so its saved activations (~10 MiB) stay alive. A leak in every
                                allocator mode.
  torch_leak_shapes.py scalar   keeps only the step's scalar loss tensor (`losses.append(loss)`
                                after backward: the graph is freed, 4 bytes stay on the GPU). A leak
                                when every tensor is its own allocation; hidden inside a cached
                                segment under the default caching allocator.
  torch_leak_shapes.py clean    keeps loss.item(), a Python float: nothing stays on the GPU.

Each of the STEPS (30) steps is an NVTX range "step" (gpuleak's iteration source). A run takes a few
seconds. The last stdout line says what the program did, for the log.
"""
import os
import sys

STEPS = int(os.environ.get("LEAK_SHAPES_STEPS", "30"))
BATCH = 512  # 512 x 1024 float32 activations: 2 MiB each

_KEPT = []  # what each mode keeps across steps


def keep_graph(model, x):
    # A "metric" computed with autograd on and kept: it references its grad_fn, which holds every
    # activation the forward pass saved for a backward that never comes.
    _KEPT.append(model(x).norm())


def keep_scalar(loss):
    _KEPT.append(loss)  # backward already freed the graph; the 0-dim tensor stays on the GPU


def keep_number(loss):
    _KEPT.append(loss.item())


def main(mode):
    if not torch.cuda.is_available():
        print("SKIPPED: torch sees no CUDA device")
        return 0
    device = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024),
    ).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for _ in range(STEPS):
        torch.cuda.nvtx.range_push("step")
        x = torch.randn(BATCH, 1024, device=device)
        y = torch.randn(BATCH, 1024, device=device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if mode == "graph":
            keep_graph(model, x)
        elif mode == "scalar":
            keep_scalar(loss)
        else:
            keep_number(loss)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"LEAK_SHAPES mode={mode} steps={STEPS} kept={len(_KEPT)} "
          f"alloc_conf={os.environ.get('PYTORCH_CUDA_ALLOC_CONF', '')!r} "
          f"no_caching={os.environ.get('PYTORCH_NO_CUDA_MEMORY_CACHING', '')!r} "
          f"memory_allocated={torch.cuda.memory_allocated()} torch={torch.__version__}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("graph", "scalar", "clean"):
        print("usage: torch_leak_shapes.py graph|scalar|clean", file=sys.stderr)
        sys.exit(2)
    try:
        import torch
    except ImportError as e:
        print(f"SKIPPED: torch not installed ({e})")
        sys.exit(0)
    sys.exit(main(sys.argv[1]))
