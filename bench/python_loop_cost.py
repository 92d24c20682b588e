#!/usr/bin/env python3
"""Issue #26, goal 4: what the Python loop observer costs a pure-Python loop with no GPU work.

The child times, in CPU time of its thread, a loop of PASSES passes (`total += i & 7`) and a
second loop calling a helper once per pass (a user function called from user code); then makes one
allocation on the (fake or real) CUDA, so that the shim resolves the interpreter and, under plain
LD_PRELOAD, starts the observer, and times the same two loops again. The figures are the second
timing's, and its ratio to the first (`after/before`: within one process, so the machine's load
between processes cancels out; under plain LD_PRELOAD it is the observer's whole cost, since the
first timing ran before the observer started). Configurations, each a fresh process, rounds interleaved so that the machine's drift
hits all alike:
  plain          python, no gpuleak
  run            gpuleak run (the observer started at interpreter start-up)
  run-noobserve  gpuleak run with GPULEAK_PY_OBSERVE=0
  preload        plain LD_PRELOAD=libgpuleak.so (the shim starts the observer at the first allocation)
Printed per configuration: the median over rounds of each loop's time (min-max) and its overhead
against plain, and the median after/before ratio.

usage: python_loop_cost.py --cli GPULEAK --shim LIBGPULEAK --cudart LIBCUDART [--rounds N] [--passes N]
       [--python PYTHON] [--json FILE]
(on a machine without a GPU: --cudart build/fake_cuda/libcudart.so.13 with LD_LIBRARY_PATH=build/fake_cuda)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import ctypes, json, os, sys, time
cudart = ctypes.CDLL(os.environ["BENCH_CUDART"])

def helper(i):
    return i & 7

def main(passes):
    t0 = time.thread_time()
    total = 0
    for i in range(passes):
        total += i & 7
    t1 = time.thread_time()
    for i in range(passes):
        total += helper(i)
    t2 = time.thread_time()
    return t1 - t0, t2 - t1

n = int(sys.argv[1])
before = main(n)  # no allocation yet: under plain LD_PRELOAD the observer is not running
p = ctypes.c_void_p()
cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20))
cudart.cudaFree(p)
time.sleep(0.01)  # the shim's pending call starts the observer here (plain LD_PRELOAD)
after = main(n)
print("RESULT " + json.dumps({"loop_s": after[0], "calls_s": after[1],
                              "loop_ratio": after[0] / before[0], "calls_ratio": after[1] / before[1]}))
"""

CONFIGS = ["plain", "run", "run-noobserve", "preload"]


def run_one(args, name, script, outdir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPULEAK_")}
    env["BENCH_CUDART"] = args.cudart
    cmd = [args.python, script, str(args.passes)]
    if name.startswith("run"):
        env["GPULEAK_QUIET"] = "1"
        if name == "run-noobserve":
            env["GPULEAK_PY_OBSERVE"] = "0"
        cmd = [args.cli, "run", "--out", outdir, "--no-report", "--quiet", "--"] + cmd
    elif name == "preload":
        env.update(LD_PRELOAD=args.shim, GPULEAK_OUT=outdir, GPULEAK_QUIET="1", GPULEAK_REPORT_TIMEOUT="0")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    for f in os.listdir(outdir):
        os.remove(os.path.join(outdir, f))
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    sys.stderr.write("%s failed (%d): %s\n" % (name, p.returncode, p.stderr[-500:]))
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--cudart", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--passes", type=int, default=10_000_000)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    results = {n: [] for n in CONFIGS}
    with tempfile.TemporaryDirectory(prefix="gpuleak-pyloop-bench-") as tmp:
        script = os.path.join(tmp, "hot_loop.py")  # a file in its own folder: the user's code
        with open(script, "w") as f:
            f.write(CHILD)
        outdir = os.path.join(tmp, "out")
        os.mkdir(outdir)
        for _ in range(args.rounds):
            for n in CONFIGS:
                r = run_one(args, n, script, outdir)
                if r:
                    results[n].append(r)
    base = {k: statistics.median(r[k] for r in results["plain"]) for k in ("loop_s", "calls_s")}
    ratio = {n: {k: statistics.median(r[k] for r in results[n]) for k in ("loop_ratio", "calls_ratio")}
             for n in CONFIGS if results[n]}
    version = subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True).stdout.strip()
    print("Python %s, %d passes, %d rounds (median, min-max; overhead against plain)" %
          (version, args.passes, args.rounds))
    for n in CONFIGS:
        rs = results[n]
        if not rs:
            print("%-14s failed" % n)
            continue
        cells = []
        for k in ("loop_s", "calls_s"):
            vals = [r[k] for r in rs]
            med = statistics.median(vals)
            cells.append("%s %.3f s (%.3f-%.3f) %+.1f %%" % (k[:-2], med, min(vals), max(vals),
                                                          100 * (med / base[k] - 1)))
        print("%-14s %s   after/before: loop %.3f calls %.3f" %
              (n, "   ".join(cells), ratio[n]["loop_ratio"], ratio[n]["calls_ratio"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"python": version, "passes": args.passes, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
