#!/usr/bin/env python3
"""Judges one case of run_retention.sh (who keeps it, issue #30): the report and the text summary
gpuleak wrote for tests/gpu/torch_retention.py MODE.

  check_retention_case.py --mode MODE --when EVENTS --want TEXT --report REPORT.json
                          --summary SUMMARY.txt [--seconds S]

--want TEXT: the first leak group's retained_by text, and a "kept by" line of the summary, must
contain TEXT, with verdict leak; "-": verdict clean, no retained_by and no "kept by" line.
--when EVENTS: the walks (exit, oom, return; comma-separated) whose path retained_by may be; the
first of them must have run (a module global's path is the same text at main()'s return as at
exit, and the earliest walk that found it is the one the report names).
Every case: no walk may have stopped at the time budget (issue #30 item 4: nothing runs past it).
Prints one line, "PASS ..." or "FAIL ... ; why", with each walk's time and objects; exit 0 or 1."""
import argparse
import json
import sys


def judge(report, summary, want, when):
    """The reasons the case fails (none: it passes) and the walks' figures, as text."""
    groups = report.get("leak_groups") or []
    held = [(g.get("retained_by") or {}) for g in groups]
    kept = [h.get("text") or "" for h in held]
    lines = [l.strip() for l in summary.splitlines() if l.strip().startswith("kept by ")]
    walks = ((report.get("run") or {}).get("retention") or {}).get("walks") or []
    took = ", ".join("%s %.0f ms (%d objects, %s)" % (w.get("event"), w.get("duration_ns", 0) / 1e6,
                                                       w.get("objects", 0), w.get("stopped")) for w in walks)
    why = []
    if want == "-":
        if report.get("verdict") != "clean" or any(kept) or lines:
            why.append("expected clean with no kept by")
    elif report.get("verdict") != "leak" or not kept or want not in kept[0] or not any(want in l for l in lines):
        why.append("expected a leak kept by %r" % want)
    elif held[0].get("event") not in when:
        why.append("the path came from the %s walk, not the %s one" % (held[0].get("event"), " or ".join(when)))
    if when[0] not in [w.get("event") for w in walks]:
        why.append("no %s walk" % when[0])
    if any(w.get("stopped") == "budget" for w in walks):
        why.append("a walk stopped at the time budget")
    return why, kept[:1], took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True)
    ap.add_argument("--when", required=True)
    ap.add_argument("--want", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--seconds", default="?")
    a = ap.parse_args()
    try:
        with open(a.report) as f:
            report = json.load(f)
        with open(a.summary) as f:
            summary = f.read()
    except (OSError, ValueError) as e:
        print("FAIL %s: no report (%s)" % (a.mode, e))
        return 1
    why, kept, took = judge(report, summary, a.want, a.when.split(","))
    print(("FAIL" if why else "PASS") + " %s (%s s): verdict %s, kept by %r; walks: %s%s" %
          (a.mode, a.seconds, report.get("verdict"), kept, took, "; " + "; ".join(why) if why else ""))
    return 1 if why else 0


if __name__ == "__main__":
    sys.exit(main())
