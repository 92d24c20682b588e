#!/usr/bin/env python3
"""The shim's int-only entry points as gpuleak's Python package calls them (ctypes, no argtypes,
64-bit values as two halves: gpuleak_api_pool_block32, gpuleak_api_pool_objects32), end to end:
the child reports pool blocks and a JAX-style sample at addresses whose low halves have the top
bit set, frees some of them the same way, and `gpuleak export --format collapsed` of its capture
must show exactly the blocks left live, each with its own size. Halves joined wrongly would leave
the freed blocks live (their frees would name other addresses).

  ctypes_calls_unit.py GPULEAK_CLI FAKE_CUDA_DIR
"""
import array
import ctypes
import os
import subprocess
import sys
import tempfile

CUPY, JAX = 2, 3
# Addresses above 4 GiB whose low halves do not fit a signed C int.
BLOCKS = [(0x7F12_89AB_C000, 3 << 20), (0x7F12_F000_0000, 5 << 20), (0x7F13_8000_1000, 7 << 20)]
OBJECTS = [(0x7E00_9000_0000, 11 << 20), (0x7E00_A000_0000, 13 << 20)]


def child():
    lib = ctypes.CDLL(None)
    cudart = ctypes.CDLL(os.environ["CTYPES_CUDART"])  # one CUDA call: the shim starts recording
    p = ctypes.c_void_p()
    cudart.cudaMalloc(ctypes.byref(p), 4096)
    block32 = lib.gpuleak_api_pool_block32
    for address, size in BLOCKS:
        assert block32(1, 0, address >> 32, address & 0xFFFFFFFF, size >> 32, size & 0xFFFFFFFF, CUPY) == 1
    for address, _ in BLOCKS[:2]:  # the first two freed: the third stays
        assert block32(2, 0, address >> 32, address & 0xFFFFFFFF, 0, 0, CUPY) == 1
    objects32 = lib.gpuleak_api_pool_objects32
    words = []
    for address, size in OBJECTS:
        words += (1 | JAX << 24, address, size, 0)
    words += (2 | JAX << 24, OBJECTS[0][0], 0, 0)  # the first one gone in the same sample
    buf = array.array("Q", words)
    where = buf.buffer_info()[0]
    assert objects32(len(words) // 4, where >> 32, where & 0xFFFFFFFF) == 3
    cudart.cudaFree(p)


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--child":
        child()
        return 0
    cli, fake = sys.argv[1], sys.argv[2]
    env = dict(os.environ, LD_LIBRARY_PATH=fake, CTYPES_CUDART=os.path.join(fake, "libcudart.so.13"),
               GPULEAK_NVML="0")
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([cli, "run", "--quiet", "--no-report", "--out", out, "--", sys.executable,
                        os.path.abspath(__file__), "--child"], env=env, check=True, timeout=120)
        captures = [f for f in os.listdir(out) if f.endswith(".gpuleak")]
        assert len(captures) == 1, captures
        folded = subprocess.run([cli, "export", "--format", "collapsed", os.path.join(out, captures[0])],
                                env=env, check=True, timeout=120, capture_output=True, text=True).stdout
    sizes = sorted(int(line.rsplit(" ", 1)[1]) for line in folded.splitlines() if line.strip())
    expected = sorted([BLOCKS[2][1], OBJECTS[1][1]])
    if sizes != expected:
        print("FAIL: live at the end %s, expected %s\n%s" % (sizes, expected, folded))
        return 1
    print("ok: live at the end %s (the freed blocks and the gone object paired by their joined halves)" % sizes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
