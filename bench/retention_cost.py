"""The cost of the retention walk (issue #30, gpuleak._retention): one walk over a program with N
live Python objects (dicts, lists, tuples, strings, as a data pipeline holds them) and T live
tensors of the fake torch (tests/python_frames/fake_frameworks/site-packages/torch: untyped_storage().data_ptr(),
an autograd node on every tenth), the paths sent to a callback instead of the shim.

usage: python3 bench/retention_cost.py [--objects N] [--tensors T] [--layout L] [--repeat R]
                                       [--budget S] [--impl FILE]

--layout says where the objects and the tensors live:
  list      the records and the tensors are module globals of the program (__main__): the tensors
            are found at once, the records never entered (the default)
  records   every tensor sits inside one of the records: the walk goes through the records
  library   the records are a library's module global (a module whose file is under
            site-packages: what a large framework's own objects are), the tensors the program's
  hidden    `list`, plus one tensor that only C holds (as C++ holds a tensor whose Python object
            PyTorch keeps): no path can reach it, so the walk searches everything it can
--impl FILE  loads the walk from another copy of _retention.py (`git show REV:tools/python/gpuleak/_retention.py`)
            to compare with it in the same process and on the same objects.

Prints per run the objects visited, the paths found, why the walk stopped, and its wall and CPU
(process) time; the CPU time is what the walk itself costs on a machine shared with other work."""
import argparse
import importlib.util
import os
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tools", "python"),
                os.path.join(HERE, "..", "tests", "python_frames", "fake_frameworks", "site-packages")]
os.environ.pop("PYFRAMES_CUDART", None)  # made-up addresses: no CUDA, no shim
import torch  # noqa: E402  (the fake one)
from gpuleak import _retention  # noqa: E402

LAYOUTS = ("list", "records", "library", "hidden")


def tensor(i):
    if i % 10 == 0:
        return torch.op("AddmmBackward0", 256, [], {"mat1": torch.empty(128)})
    return torch.empty(256)


def build(objects, tensors, layout):
    """Sets this module's globals `records`, `weights` (or a library module's `records`)."""
    # Four Python objects per record: the dict, its list, its tuple, its string.
    records = [{"id": i, "tags": [i, "x"], "span": (i, i + 1), "name": "r%d" % i} for i in range(objects // 4)]
    weights = [tensor(i) for i in range(tensors)]
    g = sys.modules["__main__"].__dict__
    if layout == "records":
        step = max(1, len(records) // max(1, tensors))
        for i, t in enumerate(weights):
            records[min(len(records) - 1, i * step)]["tensor"] = t
        weights = []
    if layout == "library":
        lib = types.ModuleType("biglib")
        lib.__file__ = "/usr/lib/python3/dist-packages/biglib/__init__.py"
        lib.records = records
        sys.modules["biglib"] = lib
        records = []
    if layout == "hidden":
        g["hidden"] = torch._hold(torch.empty(64))
    g["records"], g["weights"] = records, weights
    return len(weights)


def load(path):
    spec = importlib.util.spec_from_file_location("gpuleak._retention_impl", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=1_000_000)
    ap.add_argument("--tensors", type=int, default=10_000)
    ap.add_argument("--layout", choices=LAYOUTS, default="list")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=float, default=_retention.DEFAULT_BUDGET)
    ap.add_argument("--impl", help="another copy of _retention.py to time")
    a = ap.parse_args()
    impl = load(a.impl) if a.impl else _retention
    build(a.objects, a.tensors, a.layout)
    print("python %s, ~%d objects, %d tensors, layout %s, budget %.1f s, walk %s" %
          (sys.version.split()[0], a.objects, a.tensors, a.layout, a.budget, a.impl or "this tree's"))
    for _ in range(a.repeat):
        r = impl.Retention(a.budget)
        sent = []
        wall, cpu = time.monotonic(), time.process_time()
        r.run(impl.EXIT, send=lambda e, addr, size, text: sent.append(addr))
        wall, cpu = time.monotonic() - wall, time.process_time() - cpu
        objects, paths, stopped, _ = r.last
        print("visited %d objects, %d paths, stopped=%s: wall %.3f s, cpu %.3f s" %
              (objects, paths, stopped, wall, cpu))


if __name__ == "__main__":
    main()
