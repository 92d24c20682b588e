#!/usr/bin/env python3
"""PyTorch loops for the loop advice (docs/advice.md), each before and after following it.

    torch_advice.py MODE [STEPS=60]

  empty_cache        forward + backward + SGD, `del` of the step's tensors, then
                     torch.cuda.empty_cache() every step: the caching allocator gives its
                     segments back and cudaMallocs them again in the next step
  empty_cache-fixed  the same loop without the empty_cache() call
  late               the step's output stays referenced (`previous = out`) until the end of the
                     next step: two outputs live at once through the next step's peak
  late-fixed         the same loop without `previous`

Steps are NVTX ranges "step" (gpuleak's NVTX iteration source). Prints one line:
TIMING mode=M iterations=N total_ms=T per_iteration_us=U (the loop's wall time, synchronized).
run_advice.sh runs the late modes with `--torch per-tensor` (every tensor a cudaMallocAsync), since
the default caching allocator hides single tensors inside its segments.
"""
import sys
import time

try:
    import torch
except ImportError:  # the caller says SKIPPED
    print("SKIPPED: torch is not installed")
    sys.exit(0)

MODES = ("empty_cache", "empty_cache-fixed", "late", "late-fixed")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    if mode not in MODES:
        print("usage: torch_advice.py %s [STEPS]" % "|".join(MODES), file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("SKIPPED: torch sees no CUDA device")
        return 0
    device = torch.device("cuda", 0)
    torch.manual_seed(0)
    batch, width = 8192, 4096
    body = torch.nn.Sequential(
        torch.nn.Linear(width, width), torch.nn.ReLU(),
        torch.nn.Linear(width, width), torch.nn.ReLU(),
    ).to(device)
    # The output layer is called from a line of its own, so that its output has a call site of
    # its own: 8192 x 8192 floats = 256 MiB per step.
    head = torch.nn.Linear(width, 2 * width).to(device)
    opt = torch.optim.SGD(list(body.parameters()) + list(head.parameters()), lr=1e-4)
    x = torch.randn(batch, width, device=device)
    torch.cuda.synchronize()

    previous = None  # late: the last step's output
    t0 = time.perf_counter()
    for _ in range(steps):
        torch.cuda.nvtx.range_push("step")
        h = body(x)
        out = head(h)
        loss = out.pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if mode == "late":
            # The step's output kept "for logging" until the end of the next step: it is alive
            # through that step's forward and backward, so it raises the loop's peak by 256 MiB.
            # (A reference replaced early in the next step, by its `out = head(h)`, is gone before
            # the peak and rightly gets no advice: seen on the H200 on 2026-11-30.)
            previous = out
        del h, out, loss
        if mode == "empty_cache":
            torch.cuda.empty_cache()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1000.0
    print("TIMING mode=%s iterations=%d total_ms=%.3f per_iteration_us=%.2f" % (mode, steps, ms, ms * 1000.0 / steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
