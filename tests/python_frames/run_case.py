"""Runs one Python call-site test program under the real shim on the fake CUDA, then checks
`gpuleak report --json` against what the program expected (pyframes_common.expect).

usage: run_case.py --shim LIB --cli GPULEAK --fake-cuda DIR [--helper LIB] [--mode MODE] PROGRAM

Modes: frames (default): every expected site has exactly the expected Python frames first;
unsupported: GPULEAK_PY_FORCE_UNSUPPORTED=1, no Python frames anywhere, native frames kept,
exactly one stderr line about it; badlayout: GPULEAK_PY_FORCE_UNSUPPORTED=layout (frames read at a
wrong offset), the same outcome, no crash; depth2: GPULEAK_PY_STACK_DEPTH=2, at most two Python frames,
the innermost two as expected. Exit 0 pass, 1 fail (with the reason on stderr).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

MARKER = "[autograd backward]"


def fail(message):
    sys.stderr.write("FAIL: " + message + "\n")
    sys.exit(1)


def marker_line(path, marker):
    with open(path, encoding="utf-8") as f:
        hits = [i + 1 for i, text in enumerate(f) if text.rstrip().endswith("# @" + marker)]
    if len(hits) != 1:
        fail(f"marker @{marker} found {len(hits)} times in {path}")
    return hits[0]


def describe(stack):
    out = []
    for f in stack:
        where = f"{os.path.basename(f.get('file') or '?')}:{f.get('line')}"
        out.append(f"  [{f['kind']}] {f.get('function')} {where} {f.get('module') or ''}")
    return "\n".join(out)


def python_frames(stack):
    return [f for f in stack if f["kind"] == "python" and f.get("function") != MARKER]


def check_shape(stack, where):
    """Native frames first, then Python frames only; no interpreter frame before the Python ones."""
    kinds = [f["kind"] for f in stack if f.get("function") != MARKER]
    if "python" in kinds:
        first = kinds.index("python")
        if "native" in kinds[first:]:
            fail(f"{where}: a native frame after the Python frames\n{describe(stack)}")
        for f in stack[:first]:
            module = f.get("module") or ""
            if module.startswith("libpython") or (f.get("function") or "").startswith("_PyEval_EvalFrame"):
                fail(f"{where}: interpreter frame before the Python frames\n{describe(stack)}")


def frame_matches(frame, expected):
    function, path, marker = expected
    names = function if isinstance(function, list) else [function]
    if frame.get("function") not in names:
        return f"function {frame.get('function')!r} is not {names}"
    if path is not None and os.path.basename(frame.get("file") or "") != os.path.basename(path):
        return f"file {frame.get('file')!r} is not {path}"
    if marker is not None:
        line = marker_line(path, marker)
        if frame.get("line") != line:
            return f"line {frame.get('line')} is not {line} (@{marker})"
    return None


def check_site(stack, exp, mode, where):
    check_shape(stack, where)
    py = python_frames(stack)
    expected = exp["frames"]
    if mode in ("unsupported", "badlayout"):
        expected = []
        if not any(f["kind"] == "native" for f in stack):
            fail(f"{where}: no native frames\n{describe(stack)}")
    if mode == "depth2":
        expected = expected[:2]
        if len(py) > 2:
            fail(f"{where}: {len(py)} Python frames with GPULEAK_PY_STACK_DEPTH=2\n{describe(stack)}")
    if not expected:
        if py:
            fail(f"{where}: Python frames where none belong\n{describe(stack)}")
    elif len(py) < len(expected):
        fail(f"{where}: {len(py)} Python frames, expected at least {len(expected)}\n{describe(stack)}")
    for i, e in enumerate(expected):
        problem = frame_matches(py[i], e)
        if problem:
            fail(f"{where}: Python frame {i}: {problem}\n{describe(stack)}")
    markers = [i for i, f in enumerate(stack) if f.get("function") == MARKER]
    if exp["autograd_marker"] and mode not in ("unsupported", "badlayout"):
        if len(markers) != 1 or markers[0] == 0 or \
                "torch::autograd::Engine::thread_main" not in (stack[markers[0] - 1].get("function") or ""):
            fail(f"{where}: expected one {MARKER} frame right after Engine::thread_main\n{describe(stack)}")
    elif markers and not exp["autograd_marker"]:
        fail(f"{where}: unexpected {MARKER}\n{describe(stack)}")


def check_headline(entry, exp, where):
    """The report's headline names the user's line and the library function it went through."""
    function, path, marker, via = exp["headline"]
    h = entry.get("headline")
    if not isinstance(h, dict):
        fail(f"{where}: no headline\n{describe(entry['stack'])}")
    problem = frame_matches(h, (function, path, marker))
    if problem or h.get("kind") != "python" or h.get("user") is not True:
        fail(f"{where}: headline {h}: {problem or 'not a user Python frame'}")
    if (h.get("via") or {}).get("function") != via:
        fail(f"{where}: headline via {h.get('via')}, expected {via}")
    line = marker_line(path, marker)
    want = f"{os.path.basename(path)}:{line} in {function}"
    if not h.get("text", "").startswith(want):
        fail(f"{where}: headline text {h.get('text')!r} does not start with {want!r}")


def embedded_view(html_path):
    """The data `gpuleak view` spliced into its page."""
    with open(html_path, encoding="utf-8") as f:
        html = f.read()
    start = html.index('id="gpuleak-data">') + len('id="gpuleak-data">')
    return json.loads(html[start:html.index("</script>", start)])


def check_outputs(cli, capture, report, out):
    """One site, one id and one headline in the report, the trace and the viewer."""
    leak_ids = {l["site_id"] for l in report["leaks"]}
    trace_path = os.path.join(out, "t.json")
    html_path = os.path.join(out, "v.html")
    for argv in ([cli, "trace", "--quiet", "-o", trace_path, capture], [cli, "view", "--quiet", "-o", html_path, capture]):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            fail(f"{' '.join(argv)} exited with {r.returncode}: {r.stderr}")
    with open(trace_path, encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    markers = {}
    for e in events:
        args = e.get("args") or {}
        if e.get("cat") == "leak" and "site_id" in args:
            markers[args["site_id"]] = e.get("name", "")
    if set(markers) != leak_ids:
        fail(f"trace leak markers name sites {sorted(markers)}, the report {sorted(leak_ids)}")
    for l in report["leaks"]:
        h = l["headline"]
        label = f"{h['function']} ({os.path.basename(h['file'])}:{h['line']})"
        if label not in markers[l["site_id"]]:
            fail(f"trace marker {markers[l['site_id']]!r} does not show the headline {label!r}")
    doc = embedded_view(html_path)
    if {l["site_id"] for l in doc["report"]["leaks"]} != leak_ids:
        fail("the viewer's report names other leak sites than `gpuleak report`")
    sites = doc["view"]["sites"]
    view_ids = set(sites["site_id"])
    if not leak_ids <= view_ids:
        fail(f"the viewer's sites {sorted(view_ids)} lack leak sites {sorted(leak_ids - view_ids)}")
    for l in report["leaks"]:
        i = sites["site_id"].index(l["site_id"])
        if sites["headline_text"][i] != l["headline"]["text"]:
            fail(f"viewer headline {sites['headline_text'][i]!r}, report {l['headline']['text']!r}")
        # "Hide library frames" keeps what the headline's classifier calls the user's: the
        # headline's own frame, never an installed package's.
        frames = doc["view"]["frames"]
        if l["headline"]["user"] and frames["user"][sites["headline"][i]] != 1:
            fail(f"the viewer does not count the headline {l['headline']['text']!r} as the user's code")
        for f in sites["frames"][i]:
            if "/site-packages/" in (frames["file"][f] or "") and frames["user"][f] != 0:
                fail(f"the viewer counts the library frame {frames['function'][f]!r} as the user's code")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shim", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--fake-cuda", required=True)
    ap.add_argument("--helper", default="")
    ap.add_argument("--mode", default="frames", choices=["frames", "unsupported", "badlayout", "depth2"])
    ap.add_argument("program")
    a = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="gpuleak-pyframes-") as out:
        env = dict(os.environ)
        env.update(LD_PRELOAD=a.shim, LD_LIBRARY_PATH=a.fake_cuda + ":" + env.get("LD_LIBRARY_PATH", ""),
                   GPULEAK_OUT=out, GPULEAK_REPORT_TIMEOUT="0", GPULEAK_QUIET="1",
                   PYFRAMES_CUDART=os.path.join(a.fake_cuda, "libcudart.so.13"), PYFRAMES_HELPER=a.helper,
                   PYTHONDONTWRITEBYTECODE="1")
        for k in ("GPULEAK_PY_FORCE_UNSUPPORTED", "GPULEAK_PY_STACK_DEPTH", "GPULEAK_DISABLE"):
            env.pop(k, None)
        if a.mode == "unsupported":
            env["GPULEAK_PY_FORCE_UNSUPPORTED"] = "1"
        if a.mode == "badlayout":
            env["GPULEAK_PY_FORCE_UNSUPPORTED"] = "layout"
        if a.mode == "depth2":
            env["GPULEAK_PY_STACK_DEPTH"] = "2"
        program = os.path.abspath(a.program)
        run = subprocess.run([sys.executable, program], env=env, capture_output=True, text=True, timeout=120)
        sys.stderr.write(run.stderr)
        if run.returncode != 0:
            fail(f"{program} exited with {run.returncode}")
        lines = [l for l in run.stdout.splitlines() if l.startswith("PYFRAMES_EXPECT ")]
        if len(lines) != 1:
            fail("the program printed no expectations:\n" + run.stdout)
        expectations = json.loads(lines[0][len("PYFRAMES_EXPECT "):])
        notes = [l for l in run.stderr.splitlines() if l.startswith("gpuleak: Python")]
        if a.mode in ("unsupported", "badlayout"):
            wanted = "treated as unsupported" if a.mode == "unsupported" else "do not match"
            if len(notes) != 1 or "native stacks only" not in notes[0] or wanted not in notes[0]:
                fail(f"expected exactly one 'gpuleak: Python ... {wanted} ... native stacks only' line, got {notes}")
        elif notes:
            fail(f"unexpected stderr line(s): {notes}")

        captures = glob.glob(os.path.join(out, "*.gpuleak"))
        if len(captures) != 1:
            fail(f"expected one capture in {out}, found {captures}")
        rep = subprocess.run([a.cli, "report", "--json", captures[0]], capture_output=True, text=True, timeout=120)
        if rep.returncode != 0:
            fail(f"gpuleak report exited with {rep.returncode}: {rep.stderr}")
        report = json.loads(rep.stdout)
        if a.mode == "frames" and any(e.get("headline") for e in expectations):
            check_outputs(a.cli, captures[0], report, out)

    if a.mode in ("unsupported", "badlayout"):
        # Without Python frames the sites cannot be told apart by them: check them all together.
        live = report["live_at_exit"]
        total = sum(s["live_count"] for s in live)
        expected_total = sum(e["count"] for e in expectations)
        if total != expected_total:
            fail(f"{total} allocations live at exit, expected {expected_total}")
        for s in live:
            check_site(s["stack"], {"frames": [], "autograd_marker": False}, a.mode, f"site {s['site_id']}")
        print(f"ok: {len(live)} call sites without Python frames ({a.mode}, Python {sys.version.split()[0]})")
        return

    for exp in expectations:
        size, count = exp["size"], exp["count"]
        sites = [s for s in report["live_at_exit"] if s["live_bytes"] == size * count and s["live_count"] == count]
        if len(sites) != 1:
            listing = "\n".join(f"{s['live_count']} live, {s['live_bytes']} bytes:\n{describe(s['stack'])}"
                                for s in report["live_at_exit"])
            fail(f"expected one live site of {count} x {size} bytes, found {len(sites)} among:\n{listing}")
        check_site(sites[0]["stack"], exp, a.mode, f"site {count} x {size}")
        if exp["leak"] and a.mode == "frames":
            if report["verdict"] != "leak":
                fail(f"verdict {report['verdict']}, expected leak")
            leaks = [l for l in report["leaks"] if l["site_id"] == sites[0]["site_id"]]
            if len(leaks) != 1:
                fail(f"site {count} x {size} is not among the leaks {[l['site_id'] for l in report['leaks']]}")
            check_site(leaks[0]["stack"], exp, a.mode, f"leak {count} x {size}")
            if exp.get("headline"):
                check_headline(leaks[0], exp, f"leak {count} x {size}")
    headed = [e for e in expectations if e.get("headline") and e["leak"]]
    if headed and a.mode == "frames":
        # Sites that differ only below the user's line are one finding (leak_groups).
        lines = {(tuple(e["headline"][:3])) for e in headed}
        groups = report.get("leak_groups") or []
        if len(groups) != len(lines):
            fail(f"{len(groups)} leak groups, expected one per user line ({len(lines)}): {groups}")
        if sum(len(g["site_ids"]) for g in groups) != len(report["leaks"]):
            fail(f"leak groups {groups} do not cover the {len(report['leaks'])} leaks")
    print(f"ok: {len(expectations)} call sites checked ({a.mode}, Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
