#!/usr/bin/env python3
"""Issue #15, goal 1 (and #14's cost): what gpuleak adds to a real PyTorch training step.

Two workloads, each a full training step (forward, backward, optimizer) on the GPU:
  transformer: 6-layer nn.TransformerEncoder, d_model 512, 8 heads, batch 16 x 128 tokens, AdamW
  cnn:         a 6-conv ResNet-style network, batch 64 x 3 x 64 x 64, SGD with momentum

Configurations (every one a fresh process; rounds interleave them so that the machine's drift hits
all alike):
  plain            no gpuleak, PyTorch's default caching allocator
  plain-async      no gpuleak, PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (per-tensor's baseline)
  torch-history    no gpuleak, default allocator, torch.cuda.memory._record_memory_history() on
  gl-default       gpuleak run, default allocator (what most users run): each tensor seen through the
                   allocator's trace tracker (issue #14), default stacks
  gl-default-noobserve  gl-default with GPULEAK_PY_OBSERVE=0: the Python loop observer off (issue #26:
                   gl-default against it is the observer's cost, measured in the same rounds)
  gl-segments      gpuleak run --torch segments: the caching allocator's segments only
  gl-tensor        gpuleak run --torch per-tensor, default stacks (native 32 + Python)
  gl-tensor-py     the same with GPULEAK_STACK_DEPTH=0 (Python frames only)
  gl-tensor-nat8   the same with GPULEAK_STACK_DEPTH=8
  gl-tensor-nopy   the same with GPULEAK_PY_STACK_DEPTH=0 (native 32 only)
  gl-default-native gl-default with GPULEAK_BLOCK_NATIVE_STACKS=1 (native stacks for tensors too)
  gl-*-gcc         the same with GPULEAK_UNWINDER=libgcc (what a machine without libunwind gets)
  gl-*-nomemo      the same as gl-* with GPULEAK_STACK_MEMO=0 (every stack from libunwind's unw_backtrace)

Each process runs WARMUP steps, then BLOCKS blocks of STEPS steps, synchronizing the device after
each block; its figure is the median block's time per step. Printed: one line per configuration
and workload (median over rounds, min-max), the overhead against its baseline (plain-async for
the per-tensor configurations, plain for the rest), and for gpuleak's configurations its own time
per step (GPULEAK_SELF_TIME: the hooks' time over every step the process ran, warm-up included)
and that time's share of the baseline's median step: step times on a shared host vary more from
process to process than a few percent, the own time does not. --json FILE writes every figure.

usage: torch_step_cost.py GPULEAK_CLI [--rounds N] [--only REGEX] [--json FILE]
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, statistics, sys, time
import torch
import torch.nn as nn

workload, warmup, blocks, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.manual_seed(0)
dev = torch.device("cuda")
if os.environ.get("BENCH_TORCH_HISTORY") == "1":
    torch.cuda.memory._record_memory_history(max_entries=100000)

if workload == "transformer":
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(16, 128, 512, device=dev)
    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
else:
    def block(cin, cout, stride):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())
    model = nn.Sequential(block(3, 64, 1), block(64, 64, 1), block(64, 128, 2), block(128, 128, 1),
                          block(128, 256, 2), block(256, 256, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(256, 100)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(64, 3, 64, 64, device=dev)
    y = torch.randint(0, 100, (64,), device=dev)
    lossf = nn.CrossEntropyLoss()
    def step():
        opt.zero_grad(set_to_none=True)
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()

for _ in range(warmup):
    step()
torch.cuda.synchronize()
per_step = []
for _ in range(blocks):
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    per_step.append((time.perf_counter() - t0) / steps * 1e3)
print("RESULT " + json.dumps({"median_ms": statistics.median(per_step), "blocks": per_step}))
"""

# name: (gpuleak run options or None for a plain run, extra environment)
CONFIGS = {
    "plain": (None, {}),
    "plain-async": (None, {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}),
    "torch-history": (None, {"BENCH_TORCH_HISTORY": "1"}),
    "gl-default": ([], {}),
    # Issue #26: the same with the Python loop observer off (gl-default observes the loops).
    "gl-default-noobserve": ([], {"GPULEAK_PY_OBSERVE": "0"}),
    "gl-segments": (["--torch", "segments"], {}),
    "gl-tensor": (["--torch", "per-tensor"], {}),
    "gl-tensor-py": (["--torch", "per-tensor"], {"GPULEAK_STACK_DEPTH": "0"}),
    "gl-tensor-nat8": (["--torch", "per-tensor"], {"GPULEAK_STACK_DEPTH": "8"}),
    "gl-tensor-nopy": (["--torch", "per-tensor"], {"GPULEAK_PY_STACK_DEPTH": "0"}),
    "gl-default-native": ([], {"GPULEAK_BLOCK_NATIVE_STACKS": "1"}),
    "gl-default-gcc": ([], {"GPULEAK_BLOCK_NATIVE_STACKS": "1", "GPULEAK_UNWINDER": "libgcc"}),
    "gl-tensor-gcc": (["--torch", "per-tensor"], {"GPULEAK_UNWINDER": "libgcc"}),
    "gl-default-nomemo": ([], {"GPULEAK_STACK_MEMO": "0"}),
    "gl-tensor-nomemo": (["--torch", "per-tensor"], {"GPULEAK_STACK_MEMO": "0"}),
}
BASELINE = {name: ("plain-async" if name.startswith("gl-tensor") else "plain") for name in CONFIGS}


_SCRIPT = None  # the child's script file, written once per run


def run_one(cli, name, workload, args, outdir):
    """The step time in ms (None when the run failed) and gpuleak's own-time line (GPULEAK_SELF_TIME:
    its hooks' time, the unwinder and the memo's hits), shortened."""
    opts, extra = CONFIGS[name]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPULEAK_", "PYTORCH_CUDA_ALLOC"))}
    env.update(extra)
    # A script file, not `python -c`: code from "<string>" is no user code, and the loop observer
    # (issue #26) must see the step loop as a user's loop.
    global _SCRIPT
    if _SCRIPT is None:
        _SCRIPT = os.path.join(tempfile.mkdtemp(prefix="gpuleak-step-"), "bench_step.py")
        with open(_SCRIPT, "w") as f:
            f.write(CHILD)
    script = _SCRIPT
    cmd = [sys.executable, script, workload, str(args.warmup), str(args.blocks), str(args.steps)]
    if opts is not None:
        env["GPULEAK_QUIET"] = "1"
        env["GPULEAK_SELF_TIME"] = "1"
        cmd = [cli, "run", "--out", outdir, "--no-report", *opts, "--", *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    own = ""
    for line in p.stderr.splitlines():
        if "(GPULEAK_SELF_TIME): " in line:
            own = line.split("(GPULEAK_SELF_TIME): ", 1)[1]
    for f in glob.glob(os.path.join(outdir, "*")):
        os.remove(f)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])["median_ms"], own
    sys.stderr.write(f"{name}/{workload} failed ({p.returncode}): {p.stderr[-2000:]}\n")
    return None, own


OWN = re.compile(r"(\d+) allocation records in (\d+) us, (\d+) free records in (\d+) us")


def own_ms_per_step(own, args):
    """gpuleak's own time per step (ms) from its GPULEAK_SELF_TIME line: allocation and free hooks
    over every step the process ran (warm-up included); None without a line in microseconds."""
    m = OWN.search(own or "")
    if not m:
        return None
    return (int(m.group(2)) + int(m.group(4))) / 1000 / (args.warmup + args.blocks * args.steps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--blocks", type=int, default=15)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--only", default="")
    ap.add_argument("--workloads", default="transformer,cnn")
    ap.add_argument("--json")
    args = ap.parse_args()
    names = [n for n in CONFIGS if re.search(args.only, n)]
    workloads = args.workloads.split(",")
    figures = {(n, w): [] for n in names for w in workloads}
    owns = {(n, w): [] for n in names for w in workloads}
    with tempfile.TemporaryDirectory() as outdir:
        for r in range(args.rounds):
            for w in workloads:
                for n in names:
                    ms, own = run_one(args.cli, n, w, args, outdir)
                    if ms is not None:
                        figures[(n, w)].append(ms)
                    if own_ms_per_step(own, args) is not None:
                        owns[(n, w)].append(own_ms_per_step(own, args))
                    print(f"round {r + 1} {w:11} {n:17} {ms if ms is None else f'{ms:.3f}'} ms {own}", flush=True)
    print()
    print(f"{'workload':11} {'configuration':17} {'median ms':>9} {'min-max':>15} {'vs baseline':>12}"
          f"  own ms/step (share of the baseline's median step)")
    summary = {}
    for w in workloads:
        for n in names:
            v = figures[(n, w)]
            if not v:
                print(f"{w:11} {n:17} {'failed':>9}")
                continue
            med = statistics.median(v)
            base = figures.get((BASELINE[n], w)) or []
            rel = "" if n == BASELINE[n] or not base else f"{(med / statistics.median(base) - 1) * 100:+.1f}%"
            own = owns[(n, w)]
            own_text = ""
            if own and base:
                share = [o / statistics.median(base) * 100 for o in own]
                own_text = f"  {min(own):.3f}-{max(own):.3f} ({min(share):.1f}-{max(share):.1f} %)"
            print(f"{w:11} {n:17} {med:9.3f} {min(v):7.3f}-{max(v):7.3f} {rel:>12} ({BASELINE[n]}){own_text}")
            summary[f"{w}/{n}"] = {"median_ms": med, "runs": v, "baseline": BASELINE[n], "own_ms_per_step": own}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 0 if all(figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
