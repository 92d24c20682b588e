#!/usr/bin/env python3
"""How long a program under the shim lives on after its capture is complete: the time from the
capture file's last close (inotify IN_CLOSE_WRITE on the capture folder) to the process's exit
(waitpid). That is the process's teardown after gpuleak's own exit handler (the CUDA driver's
release of the context, other libraries' destructors, the kernel unmapping the device's memory):
time in which `gpuleak run` could already be reading the capture (issue #29 item 5).

usage: exit_gap.py [--rounds N] -- PROGRAM ARGS...

The shim comes from GPULEAK_SHIM (default: build/lib/libgpuleak.so next to this script's tree).
Per round it prints the program's wall time, when the capture was closed and the gap to the exit.
"""
import argparse
import ctypes
import os
import select
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

IN_CLOSE_WRITE = 0x00000008
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no program given")
    here = os.path.dirname(os.path.abspath(__file__))
    shim = os.environ.get("GPULEAK_SHIM", os.path.join(here, "..", "build", "lib", "libgpuleak.so"))
    libc = ctypes.CDLL(None, use_errno=True)
    gaps, walls = [], []
    for r in range(a.rounds):
        out = tempfile.mkdtemp(prefix="exit_gap.")
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0 or libc.inotify_add_watch(fd, out.encode(), IN_CLOSE_WRITE) < 0:
            sys.exit("exit_gap: inotify failed: %s" % os.strerror(ctypes.get_errno()))
        env = dict(os.environ, LD_PRELOAD=shim, GPULEAK_OUT=out, GPULEAK_QUIET="1", GPULEAK_REPORT_TIMEOUT="0")
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
        closes = {}  # name -> time of its last close
        while True:
            ready, _, _ = select.select([fd], [], [], 0.001)
            now = time.perf_counter()
            if ready:
                buf = os.read(fd, 65536)
                i = 0
                while i < len(buf):
                    _, mask, _, length = struct.unpack_from("iIII", buf, i)
                    name = buf[i + 16:i + 16 + length].rstrip(b"\0").decode(errors="replace")
                    if mask & IN_CLOSE_WRITE and name.endswith(".gpuleak"):
                        closes[name] = now
                    i += 16 + length
            if p.poll() is not None:
                break
        t_exit = time.perf_counter()
        os.close(fd)
        shutil.rmtree(out, ignore_errors=True)
        if p.returncode != 0 or not closes:
            sys.exit("exit_gap: round %d: exit %s, captures closed: %s" % (r, p.returncode, sorted(closes)))
        last = max(closes.values())
        gaps.append(t_exit - last)
        walls.append(t_exit - t0)
        print("round %d: wall %.3f s, capture closed at %.3f s, exit %.1f ms after it"
              % (r, t_exit - t0, last - t0, 1000 * (t_exit - last)), flush=True)
    print("exit after the capture's close: median %.1f ms, lowest %.1f ms, highest %.1f ms (wall median %.3f s)"
          % (1000 * statistics.median(gaps), 1000 * min(gaps), 1000 * max(gaps), statistics.median(walls)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
