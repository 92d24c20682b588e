#!/usr/bin/env python3
"""A PyTorch training-style loop that leaks 1 MiB of GPU memory per step.

Each of the 40 steps runs forward + backward + SGD on a few Linear layers inside
torch.cuda.nvtx.range_push("step") / range_pop() (gpuleak's NVTX iteration source), and
cache_activation() appends a 1 MiB CUDA tensor to a global list that is never cleared: the leak.

run_matrix.sh runs it under `gpuleak run` in four allocator modes, chosen by the environment:
  default caching allocator            (gpuleak sees segments; verdict recorded, not judged)
  PYTORCH_NO_CUDA_MEMORY_CACHING=1     (every tensor is a cudaMalloc: verdict leak, ~1 MiB/step)
  PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync   (every tensor a cudaMallocAsync: the same)
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  (cuMemCreate/cuMemMap through driver pointers)
"""
import os
import sys

STEPS = int(os.environ.get("TORCH_LOOP_STEPS", "40"))
LEAK_BYTES = 1 << 20

_CACHE = []  # the leak: one 1 MiB tensor per step, never released


def cache_activation(device):
    t = torch.zeros(LEAK_BYTES // 4, dtype=torch.float32, device=device)  # exactly 1 MiB
    _CACHE.append(t)
    return t


def main():
    if not torch.cuda.is_available():
        print("SKIPPED: torch sees no CUDA device")
        return 0
    device = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 256),
    ).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for _ in range(STEPS):
        torch.cuda.nvtx.range_push("step")
        x = torch.randn(64, 1024, device=device)
        y = torch.randn(64, 256, device=device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        cache_activation(device)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"TORCH steps={STEPS} leaked_tensors={len(_CACHE)} leaked_bytes={len(_CACHE) * LEAK_BYTES} "
          f"alloc_conf={os.environ.get('PYTORCH_CUDA_ALLOC_CONF', '')!r} "
          f"no_caching={os.environ.get('PYTORCH_NO_CUDA_MEMORY_CACHING', '')!r} "
          f"memory_allocated={torch.cuda.memory_allocated()} torch={torch.__version__}")
    return 0


if __name__ == "__main__":
    try:
        import torch
    except ImportError as e:
        print(f"SKIPPED: torch not installed ({e})")
        sys.exit(0)
    sys.exit(main())
