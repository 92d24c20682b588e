#!/usr/bin/env python3
"""Two ranks under `torchrun --standalone --nproc-per-node 2`, only rank 1 leaking.

Each rank runs on cuda:LOCAL_RANK (no NCCL, no process group: the ranks never talk), 30 steps of a
small matmul inside gpuleak_iteration-style NVTX ranges "step", with PYTORCH_NO_CUDA_MEMORY_CACHING=1
expected in the environment (every tensor a cudaMalloc, so a 1 MiB leak per step is visible at
once). Rank 1 appends a 1 MiB tensor to a list every step; rank 0 does not.

run_trace_cases.sh runs it under `gpuleak run --out OUT/ranks -- torchrun ...`, then compares the
two reports (`gpuleak report R0 R1`: rank 1 must be flagged) and merges the two traces (rank 1's
process track must say "leaking"). Prints "RANK r steps=N leaked_bytes=B" per rank.
"""
import os
import sys

STEPS = int(os.environ.get("TORCHRUN_STEPS", "30"))
LEAK_BYTES = 1 << 20
_CACHE = []


def main():
    try:
        import torch
    except ImportError as e:
        print(f"SKIPPED: torch not installed ({e})")
        return 0
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if not torch.cuda.is_available() or torch.cuda.device_count() <= local_rank:
        print(f"SKIPPED: rank {rank} has no cuda:{local_rank}")
        return 0
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
    a = torch.randn(512, 512, device=device)
    for _ in range(STEPS):
        torch.cuda.nvtx.range_push("step")
        b = torch.relu(a @ a) / 512.0
        a = b.contiguous()
        if rank == 1:
            _CACHE.append(torch.zeros(LEAK_BYTES // 4, dtype=torch.float32, device=device))
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    print(f"RANK {rank} steps={STEPS} leaked_bytes={len(_CACHE) * LEAK_BYTES} device=cuda:{local_rank}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
