"""Runs a Python program under `gpuleak run` (real shim, fake CUDA) and checks the report: the
loop found without marks (python_loop), the --loop hook, the JAX/CuPy modes.

usage: run_loop_case.py --cli GPULEAK --shim LIB --fake-cuda DIR [--expect KEY=VALUE]...
                        [--stdout-has TEXT] -- [gpuleak run options] PROGRAM [ARGS]

Each --expect is checked against `gpuleak report --json` of the one capture:
  verdict, iteration_source, primary_loop, allocator_mode: equal to VALUE;
  iterations: primary iterations == VALUE;
  rate: exactly one leak, bytes_per_iteration == VALUE; rate~: the same within 10 %;
  choice: analysis.iteration_choice.summary starts with VALUE; suggest: its suggested_loop == VALUE;
  tried: one of its `tried` phrases contains VALUE; observer: its `observer` note contains VALUE;
  a VALUE of the form A|B accepts either (iteration_source=python_loop|observed).
  note: allocator_note contains VALUE ("none": it is null);
  headline: the first leak group's headline text starts with VALUE;
  no_frame: no leak's stack, headline or via (nor the text summary) names a file holding VALUE;
  no_rate: no leak of VALUE bytes per iteration;
  env.NAME: run.allocator_env[NAME] == VALUE;
  native_frames: the first leak's stack has VALUE native frames ("some": at least one);
  rate~: exactly one leak, bytes_per_iteration within 10 % of VALUE;
  pool_tracker: run.pool_tracker contains VALUE;
  segment_block: a segment (a pool's chunk, an arena) holds blocks whose stack has FILE:LINE VALUE;
  oom_api, oom_requested: the newest OOM event's api / requested_bytes;
  oom_live: the newest OOM event's live_by_site has a site whose stack has FILE:LINE VALUE;
  no_advice: no advice of kind VALUE;
  advice_at: an advice finding leads with the line to change VALUE (change_at.text, "FILE:LINE"),
      and the text summary's advice line says "at VALUE: ";
  kept_by: the first leak group's retained_by text contains VALUE ("none": no group has one), and
      the text summary's "kept by" line says the same ("none": the summary has no "kept by");
  walks: the run.retention walks, their events joined by "," ("exit", "oom,exit"; "none": none).
  loops: the verdicts of loops[] (issue #33) joined by ",", in their order ("clean,leak");
  loopN.verdict, loopN.test, loopN.passes, loopN.released: loops[N]'s (released: true/false);
  loopN.line: loops[N]'s first leak group's headline text starts with VALUE ("none": no group);
  loopN.rate~: loops[N] has one leak group, its bytes_per_iteration within 10 % of VALUE;
  check: `gpuleak check` of the report exits VALUE; check_has: its output contains VALUE;
  junit_fails: its --junit XML has one failing testcase, the one named VALUE;
  summary_has: the text summary contains VALUE.
--env NAME=VALUE sets a variable for the program (gpuleak's own are cleared first).
--preload: run the program under plain LD_PRELOAD (GPULEAK_OUT set, no `gpuleak run`, no PYTHONPATH
entry of gpuleak's) instead of `gpuleak run`; no gpuleak run options are allowed then.
--allow-warning TEXT: gpuleak must say exactly one stderr line, holding TEXT (a bad setting).
Relative paths in the gpuleak run options and PROGRAM are taken from this folder, where the
program runs; "@name" in an option or an expectation is the line of the `# @name` comment of the
program.
--usage-error TEXT: gpuleak run must refuse the options instead (exit 2, one stderr line holding
TEXT, the program not run). Exit 0 pass, 1 fail (the reason on stderr).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(message):
    sys.stderr.write("FAIL: " + message + "\n")
    sys.exit(1)


def marker_lines(option, program):
    """Replaces @name in a --loop option by the line of `# @name` in the program."""
    if "@" not in option:
        return option
    head, _, name = option.partition("@")
    with open(program, encoding="utf-8") as f:
        hits = [i + 1 for i, text in enumerate(f) if text.rstrip().endswith("# @" + name)]
    if len(hits) != 1:
        fail(f"marker @{name} found {len(hits)} times in {program}")
    return head + str(hits[0])


def stack_lines(entry):
    """FILE:LINE (the file's base name) of every Python frame of a site's stack."""
    return ["%s:%s" % (os.path.basename(f.get("file") or ""), f.get("line"))
            for f in entry.get("stack", []) if f.get("kind") == "python"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--fake-cuda", required=True)
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--stdout-has", action="append", default=[])
    ap.add_argument("--usage-error", default=None)
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--preload", action="store_true")
    ap.add_argument("--allow-warning", default=None)
    ap.add_argument("rest", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    rest = a.rest[1:] if a.rest[:1] == ["--"] else a.rest
    program_at = next(i for i, x in enumerate(rest) if x.endswith(".py"))
    options, program = rest[:program_at], rest[program_at:]
    options = [marker_lines(o, os.path.join(HERE, program[0])) for o in options]
    a.expect = [marker_lines(e, os.path.join(HERE, program[0])) for e in a.expect]

    with tempfile.TemporaryDirectory(prefix="gpuleak-pyloop-") as out:
        env = dict(os.environ)
        for k in list(env):
            if k.startswith(("GPULEAK_", "XLA_", "PYTORCH_")):
                del env[k]
        env.update(GPULEAK_LIB=a.shim, LD_LIBRARY_PATH=a.fake_cuda + ":" + env.get("LD_LIBRARY_PATH", ""),
                   GPULEAK_REPORT_TIMEOUT="0", PYFRAMES_CUDART=os.path.join(a.fake_cuda, "libcudart.so.13"),
                   PYTHONDONTWRITEBYTECODE="1",
                   PYTHONPATH=os.pathsep.join([HERE, os.path.join(HERE, "fake_frameworks", "site-packages")]))
        env.update(kv.split("=", 1) for kv in a.env)
        if a.preload:
            if options:
                fail("--preload takes no gpuleak run options")
            env.update(LD_PRELOAD=a.shim, GPULEAK_OUT=out)
            command = [sys.executable] + program
        else:
            command = [a.cli, "run", "--out", out, "--quiet", "--no-report"] + options + \
                      ["--", sys.executable] + program
        run = subprocess.run(command, cwd=HERE, env=env, capture_output=True, text=True, timeout=300)
        sys.stderr.write(run.stderr)
        if a.usage_error is not None:
            lines = run.stderr.splitlines()
            if run.returncode != 2 or len(lines) != 1 or a.usage_error not in lines[0] or run.stdout:
                fail(f"expected exit 2 and one line with {a.usage_error!r}, got {run.returncode}: {run.stderr!r}")
            print(f"ok: refused ({lines[0]})")
            return
        if run.returncode != 0:
            fail(f"{' '.join(command)} exited with {run.returncode}")
        for text in a.stdout_has:
            if text not in run.stdout:
                fail(f"the program's output lacks {text!r}:\n{run.stdout}")
        # Under plain LD_PRELOAD the shim's at-exit line (where the capture is) is expected.
        complaints = [l for l in run.stderr.splitlines() if l.startswith("gpuleak:")]
        if a.preload:
            complaints = [l for l in complaints if "capture: " not in l]
        if a.allow_warning is not None:  # exactly one line, holding that text
            if len(complaints) != 1 or a.allow_warning not in complaints[0]:
                fail(f"expected one gpuleak line with {a.allow_warning!r} on stderr, got {complaints}")
        elif complaints:
            fail("gpuleak complained on stderr")
        captures = glob.glob(os.path.join(out, "*.gpuleak"))
        if len(captures) != 1:
            fail(f"expected one capture in {out}, found {captures}")
        rep = subprocess.run([a.cli, "report", "--json", captures[0]], capture_output=True, text=True, timeout=120)
        if rep.returncode != 0:
            fail(f"gpuleak report exited with {rep.returncode}: {rep.stderr}")
        r = json.loads(rep.stdout)
        summary = subprocess.run([a.cli, "report", "--format", "text", captures[0]], capture_output=True,
                                 text=True, timeout=120).stdout
        report_file = os.path.join(out, "case.report.json")
        with open(report_file, "w", encoding="utf-8") as f:
            f.write(rep.stdout)
        junit_file = os.path.join(out, "check.junit.xml")
        check = subprocess.run([a.cli, "check", "--format", "plain", "--junit", junit_file, report_file],
                               capture_output=True, text=True, timeout=120)
        junit = open(junit_file, encoding="utf-8").read() if os.path.exists(junit_file) else ""

    analysis = r.get("analysis") or {}
    run_info = r.get("run") or {}
    seen = {"verdict": r.get("verdict"), "iteration_source": r.get("iteration_source"),
            "primary_loop": analysis.get("primary_loop"), "iterations": analysis.get("primary_iterations"),
            "allocator_mode": run_info.get("allocator_mode"), "note": run_info.get("allocator_note"),
            "leaks": [(l["bytes_per_iteration"], l["live_count"]) for l in r.get("leaks", [])],
            "headline": [((g.get("headline") or {}).get("text")) for g in r.get("leak_groups", [])],
            "files": sorted({f.get("file") or "" for l in r.get("leaks", []) for f in l.get("stack", [])} |
                            {((g.get("headline") or {}).get("file") or "") for g in r.get("leak_groups", [])} |
                            {((((g.get("headline") or {}).get("via")) or {}).get("file") or "")
                             for g in r.get("leak_groups", [])}),
            "choice": (analysis.get("iteration_choice") or {}),
            "native_frames": [sum(f.get("kind") == "native" for f in l.get("stack", [])) for l in r.get("leaks", [])],
            "pool_tracker": run_info.get("pool_tracker"),
            "segment_blocks": sorted({line for seg in r.get("segments") or [] for b in seg.get("blocks", [])
                                      for line in stack_lines(b)}),
            "advice": [a.get("kind") for a in r.get("advice") or []],
            "kept_by": [((g.get("retained_by") or {}).get("text")) for g in r.get("leak_groups", [])],
            "walks": ",".join(w["event"] for w in ((run_info.get("retention") or {}).get("walks") or [])) or "none"}
    events = (r.get("oom") or {}).get("events") or []
    if events:
        seen.update(oom_api=events[0].get("api"), oom_requested=events[0].get("requested_bytes"),
                    oom_pool=events[0].get("pool"),
                    oom_live=sorted({line for s in events[0].get("live_by_site", []) for line in stack_lines(s)}))
    loops = r.get("loops") or []
    for e in a.expect:
        key, _, value = e.partition("=")
        if key.startswith("loop") and "." in key:
            index, _, what = key[4:].partition(".")
            loop = loops[int(index)] if int(index) < len(loops) else None
            groups = (loop or {}).get("leak_groups") or []
            if loop is None:
                ok = False
            elif what == "line":
                text = ((groups[0].get("headline") or {}).get("text") or "") if groups else None
                ok = text is None if value == "none" else text is not None and text.startswith(value)
            elif what == "rate~":
                ok = len(groups) == 1 and abs(groups[0]["bytes_per_iteration"] - float(value)) <= 0.1 * float(value)
            elif what == "released":
                ok = str(loop.get("released")).lower() == value
            elif what == "kept~":
                ok = abs(loop.get("kept_bytes", 0) - float(value)) <= 0.1 * float(value)
            elif what in ("verdict", "test", "passes", "threads", "kind"):
                ok = str(loop.get(what)) == value
            elif what == "setup":
                ok = str(loop.get("setup")).lower() == value
            else:
                fail(f"unknown expectation {key}")
            if not ok:
                fail(f"expected {e}; loops[] says {json.dumps(loops)}\nchoice: {json.dumps(seen['choice'])}")
            continue
        if key == "loops":
            ok = ",".join(l.get("verdict", "?") for l in loops) == value
        elif key == "check":
            ok = check.returncode == int(value)
        elif key == "check_has":
            ok = value in check.stdout
        elif key == "junit_fails":
            import xml.etree.ElementTree as ET
            cases = ET.fromstring(junit).iter("testcase") if junit else []
            failing = [c.get("name") for c in cases if c.find("failure") is not None]
            ok = failing == [value]  # the test's case alone: the report's own case does not fail again
        elif key == "summary_has":
            ok = value in summary
        elif key == "iterations":
            ok = seen["iterations"] == int(value)
        elif key == "rate~":
            ok = len(seen["leaks"]) == 1 and abs(seen["leaks"][0][0] - float(value)) <= 0.1 * float(value)
        elif key == "choice":
            ok = (seen["choice"].get("summary") or "").startswith(value)
        elif key == "suggest":
            ok = seen["choice"].get("suggested_loop") == value
        elif key == "observer":
            ok = value in (seen["choice"].get("observer") or "")
        elif key == "tried":
            ok = any(value in t for t in seen["choice"].get("tried") or [])
        elif key == "rate":
            ok = len(seen["leaks"]) == 1 and seen["leaks"][0][0] == float(value)
        elif key == "no_rate":
            ok = all(rate != float(value) for rate, _ in seen["leaks"])
        elif key == "note":
            ok = seen["note"] is None if value == "none" else value in (seen["note"] or "")
        elif key == "headline":
            ok = bool(seen["headline"]) and (seen["headline"][0] or "").startswith(value)
        elif key == "no_frame":
            ok = bool(seen["leaks"]) and not any(value in f for f in seen["files"]) and \
                not any(value in (h or "") for h in seen["headline"]) and value not in summary
        elif key == "native_frames":
            n = seen["native_frames"][0] if seen["native_frames"] else None
            ok = n is not None and (n > 0 if value == "some" else n == int(value))
        elif key == "rate~":
            ok = len(seen["leaks"]) == 1 and abs(seen["leaks"][0][0] - float(value)) <= 0.1 * float(value)
        elif key == "pool_tracker":
            ok = value in (seen["pool_tracker"] or "")
        elif key == "segment_block":
            ok = value in seen["segment_blocks"]
        elif key == "oom_api":
            ok = seen.get("oom_api") == value
        elif key == "oom_requested":
            ok = seen.get("oom_requested") == int(value)
        elif key == "oom_live":
            ok = value in seen.get("oom_live", [])
        elif key == "no_advice":
            ok = value not in seen["advice"]
        elif key == "advice_at":
            ok = any(((x.get("change_at") or {}).get("text")) == value for x in r.get("advice") or []) and \
                ") at %s: " % value in summary
        elif key == "kept_by":
            kept = [line.strip() for line in summary.splitlines() if line.strip().startswith("kept by ")]
            if value == "none":
                ok = not any(seen["kept_by"]) and not kept
            else:
                ok = bool(seen["kept_by"]) and value in (seen["kept_by"][0] or "") and any(value in k for k in kept)
        elif key.startswith("env."):
            ok = (run_info.get("allocator_env") or {}).get(key[4:]) == value
        elif key in seen:
            ok = seen[key] in value.split("|") if "|" in value else seen[key] == value
        else:
            fail(f"unknown expectation {key}")
        if not ok:
            fail(f"expected {e}; the report says {json.dumps(seen)}\nloops: {json.dumps(loops)}\n"
                 f"check ({check.returncode}):\n{check.stdout}\nsummary:\n{summary}")
    print(f"ok: {len(a.expect)} expectations ({' '.join(options) or 'no options'}, Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
