"""Golden capture -> report files: runs a fake-CUDA test program under `gpuleak run`, normalizes
what differs from run to run and machine to machine, and compares the report JSON with
tests/golden/<name>.report.json. It pins the report's format, its site ids (which must not depend on
the checkout's path, the pid or load addresses) and its headlines.

usage: check_report.py --cli GPULEAK --shim LIB --fake-cuda DIR [--update] [--rename NEW] NAME PROGRAM [ARGS...]

--rename NEW runs a copy of PROGRAM named NEW (in another folder) against the same golden file: a
renamed executable must keep every site id (only run.program and the frames' module name the copy).

Normalized: the run's identity (pid, ppid, host, command, start time, versions), every time
(`*_ns`, `seconds_left`), addresses and build ids, and file paths (to their basename; the ids
already hash short paths). Loop advice is off (GPULEAK_ADVICE=0): whether a pattern costs 2% of an
iteration's time is a measurement, not a format. --update rewrites the golden file.
"""
import argparse
import difflib
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
VOLATILE = {"pid", "ppid", "host", "start_time", "command", "gpuleak_version", "seconds_left", "address", "build_id"}


def normalize(value, key=None):
    if isinstance(value, dict):
        return {k: normalize(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v, key) for v in value]
    if key in VOLATILE or (key and key.endswith("_ns")):
        return None if value is None else "<volatile>"
    if key == "file" and isinstance(value, str):
        return os.path.basename(value)
    return value


def renamed_back(value, new, old):
    if isinstance(value, dict):
        return {k: (old if k in ("program", "module") and v == new else renamed_back(v, new, old))
                for k, v in value.items()}
    if isinstance(value, list):
        return [renamed_back(v, new, old) for v in value]
    return value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--fake-cuda", required=True)
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--rename", default="")
    ap.add_argument("name")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("GPULEAK_"):
            del env[k]
    env.update(LD_LIBRARY_PATH=a.fake_cuda, GPULEAK_LIB=a.shim, GPULEAK_ADVICE="0")
    with tempfile.TemporaryDirectory(prefix="gpuleak-golden-") as out:
        argv = list(a.program)
        if a.rename:
            os.makedirs(os.path.join(out, "bin"))
            copy = os.path.join(out, "bin", a.rename)
            shutil.copy2(argv[0], copy)
            argv[0] = copy
        run = subprocess.run([a.cli, "run", "--quiet", "--out", out, "--"] + argv, env=env,
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            sys.exit(f"FAIL: gpuleak run exited with {run.returncode}: {run.stderr}")
        reports = glob.glob(os.path.join(out, "*.report.json"))
        if len(reports) != 1:
            sys.exit(f"FAIL: expected one report, found {reports}: {run.stderr}")
        with open(reports[0], encoding="utf-8") as f:
            got = normalize(json.load(f))
        if a.rename:  # the copy's name is shown (run.program, frames' module); every id must stay
            got = renamed_back(got, a.rename, os.path.basename(a.program[0]))
    text = json.dumps(got, indent=2, sort_keys=True) + "\n"
    golden = os.path.join(HERE, a.name + ".report.json")
    if a.update:
        with open(golden, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {golden}")
        return
    with open(golden, encoding="utf-8") as f:
        want = f.read()
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), golden, "this run", n=2))
        sys.exit(f"FAIL: the report differs from {golden} (if the change is intended, rerun with --update):\n{diff}")
    print(f"ok: {a.name} matches {os.path.basename(golden)}")


if __name__ == "__main__":
    main()
