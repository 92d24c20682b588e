"""The cost of the exit-time retention walk (issue #30, gpuleak._retention): one walk over a program
with N live Python objects (dicts, lists, tuples, strings, as a data pipeline holds them) and T live
tensors of the fake torch (tests/python_frames/fake_frameworks/site-packages/torch: untyped_storage().data_ptr(),
an autograd node on every tenth), the paths sent to a callback instead of the shim.

usage: python3 bench/retention_cost.py [--objects N] [--tensors T] [--repeat R] [--budget S]

Prints per run the objects visited, the paths found, why the walk stopped, and its wall and CPU
(process) time; the CPU time is what the walk itself costs on a machine shared with other work."""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tools", "python"),
                os.path.join(HERE, "..", "tests", "python_frames", "fake_frameworks", "site-packages")]
os.environ.pop("PYFRAMES_CUDART", None)  # made-up addresses: no CUDA, no shim
import torch  # noqa: E402  (the fake one)
from gpuleak import _retention  # noqa: E402


def build(objects, tensors):
    # Four Python objects per record: the dict, its list, its tuple, its string.
    records = [{"id": i, "tags": [i, "x"], "span": (i, i + 1), "name": "r%d" % i} for i in range(objects // 4)]
    weights = []
    for i in range(tensors):
        if i % 10 == 0:
            weights.append(torch.op("AddmmBackward0", 256, [], {"mat1": torch.empty(128)}))
        else:
            weights.append(torch.empty(256))
    return records, weights


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=1_000_000)
    ap.add_argument("--tensors", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=float, default=_retention.DEFAULT_BUDGET)
    a = ap.parse_args()
    records, weights = build(a.objects, a.tensors)  # noqa: F841 (live while the walk runs)
    print("python %s, %d records (~%d objects), %d tensors, budget %.1f s" %
          (sys.version.split()[0], len(records), 4 * len(records), len(weights), a.budget))
    for _ in range(a.repeat):
        r = _retention.Retention(a.budget)
        sent = []
        wall, cpu = time.monotonic(), time.process_time()
        r.run(_retention.EXIT, send=lambda e, addr, size, text: sent.append(addr))
        wall, cpu = time.monotonic() - wall, time.process_time() - cpu
        objects, paths, stopped, _ = r.last
        print("visited %d objects, %d paths, stopped=%s: wall %.3f s, cpu %.3f s" % (objects, paths, stopped, wall, cpu))


if __name__ == "__main__":
    main()
