"""`python -m gpuleak.torch_adapter [--out PATH]`: builds the PyTorch adapter (gpuleak._torch, the
default per-tensor mode) for the torch this interpreter imports, once, ahead of the runs: in an
image's build step, where a C++ compiler, torch's headers and CUDA's headers are. The runs then
need none of them.

Without --out the library goes into gpuleak's cache ($GPULEAK_CACHE_DIR, else ~/.cache/gpuleak),
where every run of this torch finds it. With --out PATH it is written there (rebuilt), for
GPULEAK_TORCH_ADAPTER=PATH: a multi-stage image copies it into a slim runtime image. Prints the
path; exit 1 with the reason in one line when it cannot be built (docs/python.md).
"""

import argparse
import os
import sys

from . import _torch


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m gpuleak.torch_adapter",
                                     description="Build gpuleak's PyTorch adapter for the installed torch, once.")
    parser.add_argument("--out", metavar="PATH", help="write it here (for GPULEAK_TORCH_ADAPTER) instead of the cache")
    args = parser.parse_args(argv)
    try:
        import torch
    except Exception as e:  # ImportError, or a torch that fails to import
        sys.stderr.write("gpuleak: torch is not importable here (%s: %s): the adapter is built against the "
                         "installed torch\n" % (type(e).__name__, e))
        return 1
    source = _torch.adapter_source()
    if source is None:
        sys.stderr.write("gpuleak: the PyTorch adapter's source (trace_tracker.cpp) is not in this gpuleak package\n")
        return 1
    if args.out and os.path.lexists(args.out):
        os.unlink(args.out)  # built against this torch, not whatever was there
    path, why = _torch._build(torch, source, os.path.abspath(args.out) if args.out else None)
    if path is None:
        sys.stderr.write("gpuleak: %s\n" % why)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
