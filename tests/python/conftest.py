"""Shared fixtures for the tests of tools/python (the gpuleak package and its pytest plugin).

The tests that run real programs need a gpuleak build with its fake CUDA: $GPULEAK_BUILD_DIR
(CTest sets it), else <checkout>/build. Without one they are skipped, saying so.
"""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_PARENT = ROOT / "tools" / "python"
if str(PACKAGE_PARENT) not in sys.path:
    sys.path.insert(0, str(PACKAGE_PARENT))

pytest_plugins = ["pytester"]

# A test program's way to the GPU: the fake CUDA runtime through ctypes. Under the shim the call
# goes through gpuleak's interposers to the fake driver, so what it keeps is a real leak.
FAKE_GPU = '''
import ctypes

_cudart = ctypes.CDLL("libcudart.so.13")


def malloc(nbytes):
    p = ctypes.c_void_p()
    rc = _cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(nbytes))
    assert rc == 0, "cudaMalloc returned %d" % rc
    return p


def free(p):
    assert _cudart.cudaFree(p) == 0
'''


class Build:
    def __init__(self, root):
        self.root = root
        self.shim = root / "lib" / "libgpuleak.so"
        self.cli = root / "bin" / "gpuleak"
        self.fake_cuda = root / "fake_cuda"

    def missing(self):
        for p in (self.shim, self.cli, self.fake_cuda / "libcudart.so.13", self.fake_cuda / "libcuda.so.1"):
            if not p.exists():
                return p
        return None


@pytest.fixture(scope="session")
def build():
    b = Build(Path(os.environ.get("GPULEAK_BUILD_DIR") or ROOT / "build").resolve())
    missing = b.missing()
    if missing is not None:
        pytest.skip("needs a gpuleak build with the fake CUDA (%s is missing; set GPULEAK_BUILD_DIR)" % missing)
    return b


@pytest.fixture
def gpu_env(build, monkeypatch):
    """The environment a test program needs to reach the fake GPU and gpuleak."""
    monkeypatch.setenv("GPULEAK_LIB", str(build.shim))
    monkeypatch.setenv("GPULEAK_CLI", str(build.cli))
    monkeypatch.setenv("LD_LIBRARY_PATH", os.pathsep.join(
        [str(build.fake_cuda)] + [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(PACKAGE_PARENT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.delenv("GPULEAK_PYTEST_ROLE", raising=False)
    monkeypatch.delenv("GPULEAK_PYTEST_OUT", raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    return build
