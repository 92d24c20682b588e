#!/usr/bin/env python3
"""8 threads x 20,000 cudaMallocAsync + cudaFreeAsync pairs, plain, under `gpuleak run` (capture and
at-exit analysis) and under plain LD_PRELOAD with the shim's own at-exit report, interleaved round
by round (issue #15 goal 2, issue #29 item 5: at most 1.10x plain, at-exit report included).

usage: async_stress.py BUILD_DIR [--rounds N] [--threads N] [--pairs N] [--stack-depth N] [--late] [--hold-mb N]

Per configuration it prints the lowest and median wall time of the whole run and its CPU time
(user + system of every process and thread: on a shared machine the wall time also counts the
waits for a CPU). `gpuleak run` is split into its two parts: the capture (the program under
LD_PRELOAD, no at-exit report) and the analysis (`gpuleak report` of that capture), each timed
on its own.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"async_stress: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[:400]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--stack-depth", default=None, help="GPULEAK_STACK_DEPTH (default: gpuleak's own)")
    ap.add_argument("--ref-shim", default=None, help="another libgpuleak.so: adds a 'ref capture' configuration")
    ap.add_argument("--hold-mb", type=int, default=0,
                    help="async_stress_bench's HOLD_MB: host memory kept until exit (an exit that takes a while)")
    ap.add_argument("--late", action="store_true",
                    help="adds 'run, late': `gpuleak run` with GPULEAK_EARLY_ANALYSIS=0 (the analysis after the exit)")
    a = ap.parse_args()
    bench = os.path.join(a.build, "bench", "async_stress_bench")
    cli = os.path.join(a.build, "bin", "gpuleak")
    shim = os.path.join(a.build, "lib", "libgpuleak.so")
    args = [bench, str(a.threads), str(a.pairs)] + ([str(a.hold_mb)] if a.hold_mb else [])
    out = tempfile.mkdtemp(prefix="async_stress.")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["GPULEAK_NVML"] = "0"
    if a.stack_depth is not None:
        env["GPULEAK_STACK_DEPTH"] = a.stack_depth
    results = {k: [] for k in ("plain", "gpuleak run", "preload+report", "capture", "analysis")}
    if a.ref_shim:
        results["ref capture"] = []
    if a.late:
        results["run, late"] = []
    try:
        for _ in range(a.rounds):
            results["plain"].append(timed(args, env))
            shutil.rmtree(out, ignore_errors=True)
            results["gpuleak run"].append(timed([cli, "run", "--out", out, "--quiet", "--"] + args, env))
            shutil.rmtree(out, ignore_errors=True)
            if a.late:
                results["run, late"].append(timed([cli, "run", "--out", out, "--quiet", "--"] + args,
                                                  dict(env, GPULEAK_EARLY_ANALYSIS="0")))
                shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            # The shim alone, as plain LD_PRELOAD runs it: the at-exit `gpuleak report` it spawns included.
            results["preload+report"].append(
                timed(args, dict(env, LD_PRELOAD=shim, GPULEAK_OUT=out, GPULEAK_QUIET="1", GPULEAK_CLI=cli)))
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            cap_env = dict(env, LD_PRELOAD=shim, GPULEAK_OUT=out, GPULEAK_QUIET="1", GPULEAK_REPORT_TIMEOUT="0")
            results["capture"].append(timed(args, cap_env))
            captures = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".gpuleak")]
            if len(captures) != 1:
                sys.exit(f"async_stress: expected one capture in {out}, found {captures}")
            results["analysis"].append(timed([cli, "report", "--format", "json", captures[0]], env))
            shutil.rmtree(out, ignore_errors=True)
            if a.ref_shim:
                os.makedirs(out)
                results["ref capture"].append(timed(args, dict(cap_env, LD_PRELOAD=a.ref_shim)))
                shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print(f"{a.threads} threads x {a.pairs} pairs, {a.rounds} rounds (seconds)")
    print(f"{'config':<12} {'wall low':>9} {'wall med':>9} {'cpu low':>9} {'cpu med':>9}  walls")
    for name, runs in results.items():
        walls = [w for w, _ in runs]
        cpus = [c for _, c in runs]
        print(f"{name:<12} {min(walls):9.3f} {statistics.median(walls):9.3f} {min(cpus):9.3f} "
              f"{statistics.median(cpus):9.3f}  " + " ".join(f"{w:.3f}" for w in walls))
    plain_w = min(w for w, _ in results["plain"])
    plain_c = min(c for _, c in results["plain"])
    run_w = min(w for w, _ in results["gpuleak run"])
    run_c = min(c for _, c in results["gpuleak run"])
    print(f"gpuleak run / plain: wall {run_w / plain_w:.2f}x, cpu {run_c / plain_c:.2f}x (lowest of each; "
          f"issue #15's target: wall <= 1.15x)")
    med = {k: statistics.median(w for w, _ in runs) for k, runs in results.items()}
    print(f"by medians: gpuleak run / plain {med['gpuleak run'] / med['plain']:.2f}x, "
          f"preload+report / plain {med['preload+report'] / med['plain']:.2f}x (issue #29's target: <= 1.10x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
