"""Shared by the Python call-site test programs (run by run_case.py under the real shim).

The programs call the fake CUDA runtime through ctypes, which releases the GIL around the foreign
call exactly like PyTorch's bindings do, so gpuleak reads the Python frames without the GIL.

A program states what the report must show with expect(): for each leaking call site a size no
other site uses, how many allocations of it stay alive, and the Python frames expected innermost
first as (function, file, marker): `marker` names a `# @marker` comment on the line the frame must
report (None: any line), `file` is a path (its basename is compared) or None, `function` a string
or a tuple of accepted names. run_case.py checks them against `gpuleak report --json`.
"""
import ctypes
import json
import os
import sys

cudart = ctypes.CDLL(os.environ["PYFRAMES_CUDART"])
_api = ctypes.CDLL(None)  # the preloaded shim's gpuleak_api_* entry points
_expectations = []

QUALNAMES = sys.version_info >= (3, 11)  # 3.10 code objects carry no qualified name


def qual(qualified):
    """The name gpuleak can know for a function: its qualname on 3.11+, else the last part."""
    return qualified if QUALNAMES else qualified.rsplit(".", 1)[-1]


def iteration_begin(loop=b"train"):
    _api.gpuleak_api_iteration_begin(ctypes.c_char_p(loop))


def iteration_end():
    _api.gpuleak_api_iteration_end()


def free(p):
    cudart.cudaFree(p)


def expect(size, count, frames=(), leak=False, autograd_marker=False, headline=None):
    """frames=() means: this site must have no Python frames at all. headline: (function, file,
    marker, via function) the report's headline must name (via None: none)."""
    _expectations.append({"size": size, "count": count, "frames": [list(f) for f in frames],
                          "leak": leak, "autograd_marker": autograd_marker,
                          "headline": list(headline) if headline else None})


def done():
    print("PYFRAMES_EXPECT " + json.dumps(_expectations), flush=True)
