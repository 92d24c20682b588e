#!/usr/bin/env python3
"""torch.profiler under gpuleak with GPULEAK_CUPTI=1: the application's own profiler must still get
CUDA kernel events (gpuleak yields the single CUPTI subscriber slot to it and keeps capturing through
its interposers). Prints PROFILER_CUDA_EVENTS=<n>; exits 1 when n == 0."""
import sys


def main():
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError as e:
        print(f"SKIPPED: torch not installed ({e})")
        return 0
    if not torch.cuda.is_available():
        print("SKIPPED: torch sees no CUDA device")
        return 0
    dev = torch.device("cuda", 0)
    a = torch.randn(1024, 1024, device=dev)
    b = torch.randn(1024, 1024, device=dev)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            c = a @ b
            a = torch.relu(c) / 1024.0
        torch.cuda.synchronize()
    events = prof.events()
    n = sum(1 for e in events if e.device_type == torch.autograd.DeviceType.CUDA)
    if n == 0:  # older layouts: kernels only as device time in the key averages
        n = sum(1 for e in prof.key_averages() if getattr(e, "device_time_total", 0) > 0)
    print(f"PROFILER_CUDA_EVENTS={n}")
    print(f"TORCH profiler events={len(events)} torch={torch.__version__}")
    return 0 if n > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
