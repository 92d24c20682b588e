#!/usr/bin/env python3
"""Judges one framework loop of run_frameworks.sh: the report gpuleak wrote against what the
program itself measured (framework_loops.py's result file).

  check_framework_case.py --report REPORT.json --measured RESULT.json [--tolerance 0.10]
                          [--iteration-source SOURCE] [--pool-refusal-ok TEXT]

A --leak run passes when: verdict is leak; the first (largest) entry of leak_groups[] (leaks[] in
a report without groups) has a headline with user true naming the program's own file and its
keep line (`# @keep-FRAMEWORK`); that entry's bytes_per_iteration is within the tolerance (10%) of the program's
kept_bytes_per_step. A --clean run passes when verdict is clean. --iteration-source also requires
the report's iteration_source (e.g. python_loop for the runs without marks; A|B accepts either:
observed|python_loop, since Python 3.12+ observes the loop and 3.10/3.11 infers it).
--loops VERDICTS also requires the verdicts of the report's loops[] (issue #33), joined by ",", in
their order ("clean,leak": a clean training loop, then a leaking evaluation loop).
--pool-refusal-ok TEXT also passes the documented refusal of a framework pool without marks
(src/analysis/frameworks.cpp): verdict inconclusive, iteration_source none, and run.allocator_note
containing TEXT (the per-object mode it recommends); the line says which of the two it saw.
With a torch_snapshot in the program's result (the default caching allocator), the report must also
have seen tensors (a `segments` section, no segments-only note), its segments' bytes at exit must be
within 5% of the snapshot's reserved bytes, and the leak's live tensors no more than the snapshot's.
Prints one line, "ok: ..." or "FAIL: ..."; exit status 0 pass, 1 fail, 77 when the program
skipped (its result says so), 2 on unreadable input.
"""
import argparse
import json
import os
import sys


def load(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"FAIL: cannot read the {what} {path}: {e}")
        sys.exit(2)


def mib(n):
    return f"{n / 1048576:.3f} MiB" if isinstance(n, (int, float)) else repr(n)


def judge(report, measured, tolerance, source, refusal_ok):
    """(ok, text)."""
    verdict = report.get("verdict")
    seen = f"verdict {verdict}, iteration_source {report.get('iteration_source')}, " \
           f"{(report.get('analysis') or {}).get('primary_iterations')} iterations"
    note = (report.get("run") or {}).get("allocator_note") or ""
    if refusal_ok and verdict == "inconclusive" and report.get("iteration_source") == "none" \
            and refusal_ok in note:
        return True, f"{seen}; refused as documented: the allocator note recommends {refusal_ok!r}"
    if source and report.get("iteration_source") not in source.split("|"):
        return False, f"expected iteration_source {source}; {seen}"
    if measured["mode"] == "clean":
        leaks = report.get("leaks") or []
        extra = f"; leaks: {[(l.get('headline') or {}).get('text') for l in leaks[:3]]}" if leaks else ""
        return verdict == "clean", seen + extra
    if verdict != "leak":
        return False, f"expected verdict leak; {seen}"
    entries = report.get("leak_groups")
    if entries is None:
        entries = report.get("leaks") or []
    if not entries:
        return False, f"verdict leak but no leak entries; {seen}"
    top = entries[0]
    head = top.get("headline") or {}
    want_file = os.path.basename(measured["file"])
    where = f"headline {head.get('text')!r}"
    if not head.get("user") or os.path.basename(head.get("file") or "") != want_file \
            or head.get("line") != measured["keep_line"]:
        return False, f"expected the headline {want_file}:{measured['keep_line']} (user code); {where}; {seen}"
    rate, want = top.get("bytes_per_iteration"), measured["kept_bytes_per_step"]
    if not isinstance(rate, (int, float)) or not want or abs(rate - want) > tolerance * want:
        return False, f"rate {mib(rate)}/iteration, the program kept {mib(want)}/step (±{tolerance:.0%}); {where}"
    return True, f"{seen}; {where}; rate {mib(rate)}/iteration vs {mib(want)}/step measured"


def snapshot_check(report, measured):
    """PyTorch's caching allocator (issue 14): the report saw tensors, and its figures agree with
    torch.cuda.memory._snapshot() of the same run (taken at the loop's end; nothing is allocated
    after it, and the allocator keeps its segments to the end). (ok, text), or None without one."""
    snap = measured.get("torch_snapshot")
    if not snap:
        return None
    note = (report.get("run") or {}).get("allocator_note") or ""
    segments = [s for s in report.get("segments") or [] if s.get("device") == 0]
    if not segments or "not tensors" in note:
        return False, f"no tensors seen in the caching allocator (segments: {len(segments)}; note {note[:120]!r})"
    reserved = sum(s.get("live_at_exit_bytes") or 0 for s in segments)
    want = snap["reserved_bytes"]
    text = f"segments {mib(reserved)} at exit vs {mib(want)} reserved in torch's snapshot"
    if abs(reserved - want) > 0.05 * max(want, 1):
        return False, text
    if measured["mode"] == "leak":
        groups = report.get("leak_groups") or report.get("leaks") or []
        top = groups[0] if groups else {}
        if (top.get("live_bytes") or 0) > snap["active_bytes"] or (top.get("live_count") or 0) > snap["kept_blocks"]:
            return False, (f"{text}; the leak holds {mib(top.get('live_bytes'))} in {top.get('live_count')} tensors, "
                           f"the snapshot {mib(snap['active_bytes'])} active, {snap['kept_blocks']} blocks of the kept size")
        text += f"; leak {top.get('live_count')} tensors, snapshot {snap['kept_blocks']} blocks of that size"
    return True, text


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", required=True)
    ap.add_argument("--measured", required=True)
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--iteration-source", default=None)
    ap.add_argument("--pool-refusal-ok", default=None, metavar="TEXT")
    ap.add_argument("--loops", default=None, metavar="VERDICTS")
    a = ap.parse_args()
    measured = load(a.measured, "program's result")
    if measured.get("skipped"):
        print(f"skipped: {measured['skipped']}")
        return 77
    for key in ("mode", "file", "keep_line", "kept_bytes_per_step"):
        if key not in measured:
            print(f"FAIL: the program's result {a.measured} lacks {key!r}")
            return 2
    report = load(a.report, "report")
    ok, text = judge(report, measured, a.tolerance, a.iteration_source, a.pool_refusal_ok)
    if a.loops is not None:
        verdicts = ",".join(l.get("verdict", "?") for l in report.get("loops") or [])
        lines = [f"{l.get('name')}: {l.get('verdict')}" for l in report.get("loops") or []]
        if verdicts != a.loops:
            ok, text = False, f"expected loops {a.loops}, the report has {lines}; " + text
        else:
            text += f"; loops {lines}"
    snap = snapshot_check(report, measured)
    if snap is not None:
        ok = ok and snap[0]
        text += "; " + ("" if snap[0] else "FAIL: ") + snap[1]
    print(("ok: " if ok else "FAIL: ") + text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
