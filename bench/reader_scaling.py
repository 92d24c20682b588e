#!/usr/bin/env python3
"""Time and peak memory of the JSON readers on large inputs (issue #25; docs/limits.md).

usage: reader_scaling.py GPULEAK OUTDIR [MB ...]   (default sizes 1 10 100)

For each size it writes two inputs and runs each command once under /usr/bin/time -v:
  - a report: tests/golden/leaky_shared.report.json with its iteration repeated until the file is
    that large (`check`, `diff` of the report with itself, `view`);
  - a torch.profiler-shaped trace, {"traceEvents": [...]} of small complete events (`merge`).
Prints one line per run: command, MB, events or iterations, wall seconds, peak RSS MiB, exit code.
Not a test: benchmarks stay out of CI (docs/benchmarks.md).
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "tests", "golden", "leaky_shared.report.json")


def concrete(o):
    if isinstance(o, dict):
        return {k: concrete(v) for k, v in o.items()}
    if isinstance(o, list):
        return [concrete(v) for v in o]
    return 1 if o == "<volatile>" else o


def write_report(path, size):
    base = concrete(json.load(open(GOLDEN)))
    base["run"].update(command=["prog"], host="h", start_time="2026-01-01T00:00:00Z", gpuleak_version="0.1.0")
    it = base["iterations"][0]
    one = len(json.dumps(dict(it, index=0))) + 2
    n = max(1, size // one)
    base["iterations"] = [dict(it, index=i) for i in range(n)]
    with open(path, "w") as f:
        json.dump(base, f)
    return n


def write_trace(path, size):
    n = 0
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}], "traceEvents": [\n')
        written = 0
        while written < size:
            e = ('{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 2, "ts": %d, "dur": 3, '
                 '"args": {"External id": %d, "Sequence number": %d, "Fwd thread id": 0}}' % (n * 5, n, n))
            f.write((",\n" if n else "") + e)
            written += len(e) + 2
            n += 1
        f.write('\n], "traceName": "t.json"}\n')
    return n


def timed(cmd):
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", p.stderr)
    h, m, s = wall.groups()
    secs = int(h or 0) * 3600 + int(m) * 60 + float(s)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)) / 1024
    return secs, rss, p.returncode


def main():
    gpuleak, out = sys.argv[1], sys.argv[2]
    sizes = [float(x) for x in sys.argv[3:]] or [1, 10, 100]
    os.makedirs(out, exist_ok=True)
    for mb in sizes:
        size = int(mb * 1e6)
        report = os.path.join(out, "r%g.report.json" % mb)
        trace = os.path.join(out, "t%g.trace.json" % mb)
        n_it = write_report(report, size)
        n_ev = write_trace(trace, size)
        runs = [("check", n_it, [gpuleak, "check", report]),
                ("diff", n_it, [gpuleak, "diff", report, report]),
                ("view", n_it, [gpuleak, "view", report, "-o", os.path.join(out, "r.html")]),
                ("merge", n_ev, [gpuleak, "merge", trace, "-o", os.path.join(out, "m.json")])]
        for name, n, cmd in runs:
            secs, rss, rc = timed(cmd)
            print("%-6s %6g MB %9d  %8.2f s  %8.1f MiB  exit %d" % (name, mb, n, secs, rss, rc), flush=True)


if __name__ == "__main__":
    main()
