#!/usr/bin/env python3
"""Issue #15, goal 4: what reading the Python frames adds to an allocation, native stacks off.

Python calls the fake CUDA runtime through ctypes (as tests/python_frames does), PAIRS
cudaMallocAsync + cudaFreeAsync pairs from a function 8 Python frames deep, and times the loop on
its own thread's CPU clock. Configurations, interleaved round by round: plain (no gpuleak),
`nopy` (gpuleak, GPULEAK_STACK_DEPTH=0 GPULEAK_PY_STACK_DEPTH=0: no stacks at all) and `py`
(gpuleak, GPULEAK_STACK_DEPTH=0, Python frames at their default depth). Python frames' own share
is (py - nopy) / plain: what they add, relative to the pair the program makes without gpuleak.

usage: python_frames_cost.py BUILD_DIR [--rounds N] [--pairs N] [--reps N]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import ctypes, sys, time
cudart = ctypes.CDLL(sys.argv[1])
pairs, reps = int(sys.argv[2]), int(sys.argv[3])
stream = ctypes.c_void_p()
assert cudart.cudaStreamCreate(ctypes.byref(stream)) == 0
p = ctypes.c_void_p()
malloc_async, free_async, size = cudart.cudaMallocAsync, cudart.cudaFreeAsync, ctypes.c_size_t(256)

def loop(n):
    for _ in range(n):
        malloc_async(ctypes.byref(p), size, stream)
        free_async(p, stream)

def deep(k, n):
    return loop(n) if k == 0 else deep(k - 1, n)

deep(7, 1000)
times = []
for _ in range(reps):
    t0 = time.thread_time_ns()
    deep(7, pairs)
    times.append((time.thread_time_ns() - t0) / pairs)
print(f"median={sorted(times)[len(times) // 2]:.1f}")
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    cudart = os.path.join(a.build, "fake_cuda", "libcudart.so.13")
    shim = os.path.join(a.build, "lib", "libgpuleak.so")
    out = tempfile.mkdtemp(prefix="pyframes_cost.")
    base = dict(os.environ, GPULEAK_OUT=out, GPULEAK_QUIET="1", GPULEAK_REPORT_TIMEOUT="0", GPULEAK_NVML="0",
                LD_LIBRARY_PATH=os.path.join(a.build, "fake_cuda"))
    base.pop("LD_PRELOAD", None)
    configs = {
        "plain": {},
        "nopy": {"LD_PRELOAD": shim, "GPULEAK_STACK_DEPTH": "0", "GPULEAK_PY_STACK_DEPTH": "0"},
        "py": {"LD_PRELOAD": shim, "GPULEAK_STACK_DEPTH": "0"},
    }
    res = {k: [] for k in configs}
    for r in range(a.rounds):
        for name in (configs if r % 2 == 0 else reversed(list(configs))):
            env = dict(base, **configs[name])
            p = subprocess.run([sys.executable, "-c", CHILD, cudart, str(a.pairs), str(a.reps)], env=env,
                               capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                sys.exit(f"python_frames_cost: {name} failed: {p.stderr.strip()[:400]}")
            res[name].append(float(p.stdout.split("median=")[1]))
            for f in os.listdir(out):
                os.unlink(os.path.join(out, f))
    os.rmdir(out)
    low = {k: min(v) for k, v in res.items()}
    print(f"ns per pair (Python thread CPU time, lowest median of {a.rounds} rounds; all medians after)")
    for k, v in res.items():
        print(f"{k:<6} {low[k]:8.1f} {statistics.median(v):8.1f}  " + " ".join(f"{x:.1f}" for x in v))
    print(f"gpuleak without stacks adds {low['nopy'] - low['plain']:.1f} ns; Python frames add "
          f"{low['py'] - low['nopy']:.1f} ns more: {100 * (low['py'] - low['nopy']) / low['plain']:.1f}% of the "
          f"plain pair (issue #15's target for the Python frames' own share: <= 2%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
