#!/usr/bin/env python3
"""Checks one case of the GPU conformance matrix (run_matrix.sh runs the program, this judges it).

    check_case.py --name NAME --check KIND --dir CASE_DIR --rc RC --gpuleak PATH [--cupti]
                  [--program PROG] [--captures DIR]

CASE_DIR holds `stdout` and `stderr` of the program and, under `capture/` (or --captures), what
gpuleak wrote. KIND says which checks apply:
  native            a C++ program: its EXPECT lines against `gpuleak stats`, one capture, a report
  preload           the same under plain LD_PRELOAD (no CLI): the capture in ./gpuleak-out and the
                    one-line summary on stderr
  torch-default     torch_loop.py under the caching allocator (verdict recorded, not judged)
  torch-pertensor   torch_loop.py where every tensor is an allocation: verdict leak, ~1 MiB/step
  torch-expandable  torch_loop.py with expandable segments: cuMemCreate seen (by_kind.vmm > 0)
  profiler          torch_profiler.py: torch.profiler still gets CUDA kernel events under gpuleak
  python            a Python script that prints its own EXPECT lines, or SKIPPED
--cupti adds: uncaptured == 0 and cupti_state == 1 (subscribed).

Prints detail lines for the log, then one last line:
    RESULT<TAB>PASS|FAIL|SKIP<TAB>expected<TAB>seen
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

MIB = 1 << 20
CUPTI_STATES = {0: "off", 1: "subscribed", 2: "unavailable", 3: "slot taken", 4: "yielded"}
TORCH_NVTX_MIN = 80  # 40 steps x (push + pop)


class Case:
    def __init__(self, args):
        self.args = args
        self.failures = []
        self.expected = []
        self.seen = []
        self.skip = None

    def log(self, msg):
        print("  " + msg)

    def expect(self, label, ok, expected, seen):
        self.expected.append(expected)
        self.seen.append(seen)
        if not ok:
            self.failures.append(f"{label}: expected {expected}, seen {seen}")

    def info(self, seen):
        self.seen.append(seen)


def compare(op, seen, want):
    if seen is None:
        return False
    if op == "=":
        return seen == want
    if op == ">=":
        return seen >= want
    if op == "<=":
        return seen <= want
    if op == ">":
        return seen > want
    raise ValueError(op)


TERM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)?(>=|<=|=|>)(\d+)")


def parse_expect_lines(text):
    """[(section, key, op, value)] from EXPECT* lines; section is '', KIND, API, OP, LABEL, GRAPH."""
    out, leaks = [], []
    for line in text.splitlines():
        line = line.strip()
        m = re.match(r"^EXPECT(?:_([A-Z]+))?\s+(.*)$", line)
        if not m:
            continue
        section, rest = m.group(1) or "", m.group(2)
        if section == "VERDICT":
            continue  # check_verdict
        if section == "LEAK":
            leaks.append(dict(kv.split("=", 1) for kv in rest.split() if "=" in kv))
            continue
        for term in rest.split():
            t = TERM.fullmatch(term)
            if not t:
                out.append((section, term, "?", None))
                continue
            key = t.group(1) or ("graph_reservations" if section == "GRAPH" else "")
            out.append((section, key, t.group(2), int(t.group(3))))
    return out, leaks


STATS_ALIASES = {"oom": "ooms", "graph": "graph_reservations"}


def stat_value(stats, section, key):
    if section in ("", "GRAPH"):
        v = stats.get(STATS_ALIASES.get(key, key))
        return int(v) if isinstance(v, (int, bool)) else v
    table = {"KIND": "by_kind", "API": "by_api", "OP": "by_op", "LABEL": "runtime_labels"}[section]
    return int(stats.get(table, {}).get(key, 0))


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def gpuleak_stats(gpuleak, capture):
    p = subprocess.run([gpuleak, "stats", capture], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"gpuleak stats exited {p.returncode}: {p.stderr.strip()[:300]}")
    data = json.loads(p.stdout)
    return data[0] if isinstance(data, list) else data


def pick_capture(case, captures_dir, program):
    files = sorted(glob.glob(os.path.join(captures_dir, "*.gpuleak")))
    case.log(f"captures in {captures_dir}: {[os.path.basename(f) for f in files] or 'none'}")
    if not files:
        return None, None, files
    stats = {}
    for f in files:
        try:
            stats[f] = gpuleak_stats(case.args.gpuleak, f)
        except Exception as e:  # noqa: BLE001 - any failure to read is a finding
            case.failures.append(f"{os.path.basename(f)}: {e}")
    if not stats:
        return None, None, files
    mine = [f for f in stats if program and stats[f].get("program") == program]
    pool = mine or list(stats)
    chosen = max(pool, key=lambda f: stats[f].get("allocs", 0))
    return chosen, stats[chosen], files


def load_report(case, capture):
    path = capture[: -len(".gpuleak")] + ".report.json"
    if not os.path.exists(path):
        return None, path
    try:
        with open(path) as f:
            return json.load(f), path
    except (OSError, ValueError) as e:
        case.failures.append(f"report {os.path.basename(path)} unreadable: {e}")
        return None, path


def leak_summary(report):
    out = []
    for leak in report.get("leaks") or []:
        funcs = [fr.get("function") or "?" for fr in leak.get("stack") or []]
        out.append((leak.get("bytes_per_iteration"), funcs))
    return out


def check_generic_capture(case, stats, cupti):
    s = case
    dropped = stats.get("events_dropped")
    s.expect("events_dropped", dropped == 0, "events_dropped=0", f"events_dropped={dropped}")
    if stats.get("clean_exit") is not True:
        s.failures.append(f"clean_exit is {stats.get('clean_exit')} (no final stats record)")
    if stats.get("truncated"):
        s.failures.append("capture truncated")
    if stats.get("disabled"):
        s.failures.append(f"tracking was turned off: {stats.get('disabled')}")
    if cupti:
        unc, st = stats.get("uncaptured"), stats.get("cupti_state")
        s.expect("uncaptured", unc == 0, "uncaptured=0", f"uncaptured={unc}")
        s.expect("cupti_state", st == 1, "cupti=subscribed",
                 f"cupti={CUPTI_STATES.get(st, st)}")


def check_expect_lines(case, stats, text):
    terms, leaks = parse_expect_lines(text)
    if not terms and not leaks:
        case.failures.append("the program printed no EXPECT line")
    for section, key, op, want in terms:
        if op == "?":
            case.failures.append(f"unparsable EXPECT term {key!r}")
            continue
        prefix = {"": "", "GRAPH": "", "KIND": "kind.", "API": "api.", "OP": "op.", "LABEL": "label."}[section]
        name = prefix + (key if section != "GRAPH" else "graph_reservations")
        seen = stat_value(stats, section, key)
        if key == "oom" and section == "" and not any(t[0] == "" and t[1] == "failed_allocs" for t in terms):
            failed = stats.get("failed_allocs")  # `oom>=1` also means an allocation failed
            case.expect("failed_allocs", compare(op, failed, want), f"failed_allocs{op}{want}",
                        f"failed_allocs={failed}")
        case.expect(name, compare(op, seen, want), f"{name}{op}{want}", f"{name}={seen}")
    return leaks


def check_leaks(case, report, leaks):
    """EXPECT_LEAK function=F bytes_per_iteration=B [frame=K]: a leak of B bytes per iteration
    (within 5%) whose stack holds F; with frame=K, F must be frame K (0: the code that called the
    CUDA allocation API, CUDA's own frames dropped, DESIGN.md)."""
    for want in leaks:
        func, bpi = want.get("function"), int(want.get("bytes_per_iteration", "0"))
        label = f"leak {func} ~{bpi}B/it"
        if report is None:
            case.expect(label, False, label, "no report")
            continue
        found = [(b, f) for b, f in leak_summary(report) if func in f]
        seen = ", ".join(f"{b}B/it" for b, _ in found) or f"verdict={report.get('verdict')}, no such leak"
        close = [(b, f) for b, f in found if b is not None and abs(b - bpi) <= 0.05 * bpi]
        case.expect(label, bool(close), label, seen)
        if "frame" in want and close:
            k = int(want["frame"])
            frames = close[0][1]
            at = frames[k] if k < len(frames) else None
            case.expect(f"leak frame {k}", at == func, f"leak.frame{k}={func}", f"leak.frame{k}={at}")


def check_verdict(case, report, text):
    """EXPECT_VERDICT v1|v2...: the report's verdict is one of these."""
    for line in text.splitlines():
        m = re.match(r"^EXPECT_VERDICT\s+(\S+)", line.strip())
        if not m:
            continue
        allowed = m.group(1).split("|")
        verdict = report.get("verdict") if report else None
        case.expect("verdict", verdict in allowed, "verdict=" + m.group(1), f"verdict={verdict}")


def native(case, a):
    stdout = read(os.path.join(a.dir, "stdout"))
    capture, stats, _ = pick_capture(case, a.captures, a.program)
    if capture is None:
        case.failures.append("no capture written")
        return
    case.log(f"capture {os.path.basename(capture)}: allocs={stats.get('allocs')} frees={stats.get('frees')} "
             f"failed={stats.get('failed_allocs')} graph={stats.get('graph_reservations')} "
             f"unknown_frees={stats.get('unknown_frees')} ooms={stats.get('ooms')}")
    case.log("by_kind " + json.dumps(stats.get("by_kind")) + " by_api " + json.dumps(stats.get("by_api")))
    case.log("by_op " + json.dumps(stats.get("by_op")) + " labels " + json.dumps(stats.get("runtime_labels")))
    case.log(f"cupti_state={stats.get('cupti_state')} uncaptured={stats.get('uncaptured')} "
             f"events_dropped={stats.get('events_dropped')} clean_exit={stats.get('clean_exit')}")
    leaks = check_expect_lines(case, stats, stdout)
    check_generic_capture(case, stats, a.cupti)
    report, rpath = load_report(case, capture)
    if a.check == "native":
        if report is None:
            case.failures.append(f"no report {os.path.basename(rpath)}")
        elif not re.fullmatch(r"gpuleak\.report/1(\.\d+)?", str(report.get("schema"))):
            case.failures.append(f"report schema {report.get('schema')!r}")
        if report is not None:
            case.log(f"report verdict={report.get('verdict')} iteration_source={report.get('iteration_source')} "
                     f"leaks={leak_summary(report)[:4]}")
            if a.name.startswith("oom") and not (report.get("oom") or {}).get("events"):
                case.failures.append("report has no oom.events")
    else:
        case.log(f"report under plain LD_PRELOAD: {'present' if report else 'absent'} ({os.path.basename(rpath)})")
    if report is not None or a.check == "native":
        check_leaks(case, report, leaks)
        check_verdict(case, report, stdout)
    if a.check == "preload":
        stderr = read(os.path.join(a.dir, "stderr"))
        lines = [ln for ln in stderr.splitlines() if ln.startswith("gpuleak:")]
        summary = [ln for ln in lines if "allocation" in ln or ".gpuleak" in ln]
        for ln in lines[:5]:
            case.log("stderr: " + ln)
        case.expect("summary", len(summary) >= 1, "stderr summary line",
                    f"{len(summary)} summary line(s)")


def torch_case(case, a):
    stdout = read(os.path.join(a.dir, "stdout"))
    for ln in stdout.splitlines():
        if ln.startswith(("TORCH", "SKIPPED")):
            case.log("stdout: " + ln)
    if "SKIPPED" in stdout.split("\n", 1)[0]:
        case.skip = stdout.splitlines()[0]
        return
    capture, stats, _ = pick_capture(case, a.captures, a.program)
    if capture is None:
        case.failures.append("no capture written")
        return
    allocs = stats.get("allocs", 0)
    case.log(f"capture {os.path.basename(capture)}: allocs={allocs} frees={stats.get('frees')} "
             f"by_kind={json.dumps(stats.get('by_kind'))} nvtx={stats.get('nvtx')} "
             f"markers={stats.get('markers')} cupti_state={stats.get('cupti_state')}")
    case.log("by_api " + json.dumps(stats.get("by_api")) + " labels " + json.dumps(stats.get("runtime_labels")))
    case.expect("allocs", allocs > 0, "allocs>0", f"allocs={allocs}")
    dropped = stats.get("events_dropped")
    case.expect("events_dropped", dropped == 0, "events_dropped=0", f"events_dropped={dropped}")
    if a.cupti:
        check_generic_capture(case, stats, True)
    report, rpath = load_report(case, capture)
    verdict = report.get("verdict") if report else None
    if report:
        case.log(f"report verdict={verdict} iteration_source={report.get('iteration_source')} "
                 f"leaks={leak_summary(report)[:4]}")
    if a.check.startswith("torch-"):
        nvtx = stats.get("nvtx", 0)
        case.expect("nvtx", nvtx >= TORCH_NVTX_MIN, f"nvtx>={TORCH_NVTX_MIN}", f"nvtx={nvtx}")
        if report is None:
            case.failures.append(f"no report {os.path.basename(rpath)}")
    if a.check == "torch-pertensor":
        leaks = leak_summary(report) if report else []
        near = [b for b, _ in leaks if b is not None and abs(b - MIB) <= 0.05 * MIB]
        case.expect("verdict", verdict == "leak", "verdict=leak", f"verdict={verdict}")
        case.expect("bytes_per_iteration", bool(near), "leak ~1MiB/step (5%)",
                    "leaks=" + (",".join(str(b) for b, _ in leaks[:3]) or "none"))
        named = [f for b, f in leaks if b in near and any("cache_activation" in x for x in f)]
        case.log(f"cache_activation in the leak's stack: {'yes' if named else 'no'} (not judged)")
    elif a.check == "torch-expandable":
        vmm = int((stats.get("by_kind") or {}).get("vmm", 0))
        case.expect("vmm", vmm > 0, "kind.vmm>0", f"kind.vmm={vmm}")
        case.info(f"verdict={verdict}")
    elif a.check == "torch-default":
        case.info(f"verdict={verdict} (recorded, not judged)")
    elif a.check == "profiler":
        m = re.search(r"^PROFILER_CUDA_EVENTS=(\d+)", stdout, re.M)
        n = int(m.group(1)) if m else None
        case.expect("profiler", n is not None and n > 0, "profiler CUDA events>0", f"events={n}")
        st = stats.get("cupti_state")
        case.info(f"cupti={CUPTI_STATES.get(st, st)}")
    elif a.check == "python":
        check_expect_lines(case, stats, stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--check", required=True,
                    choices=["native", "preload", "torch-default", "torch-pertensor", "torch-expandable",
                             "profiler", "python"])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--captures")
    ap.add_argument("--rc", type=int, required=True)
    ap.add_argument("--gpuleak", required=True)
    ap.add_argument("--program", default="")
    ap.add_argument("--cupti", action="store_true")
    a = ap.parse_args()
    a.captures = a.captures or os.path.join(a.dir, "capture")
    case = Case(a)

    stdout = read(os.path.join(a.dir, "stdout"))
    first = stdout.splitlines()[0] if stdout.strip() else ""
    if a.rc in (124, 137):
        case.failures.append(f"timed out (exit {a.rc})")
    elif a.rc != 0:
        case.failures.append(f"exit status {a.rc}")
    # gpuleak's own complaints (an internal error makes `gpuleak run` exit 2 whatever CMD did).
    for ln in read(os.path.join(a.dir, "stderr")).splitlines():
        # The program's own out-of-memory ("cuMemAlloc_v2 of 16.0 GiB failed at ...") is a finding, not a complaint.
        if ln.startswith("gpuleak:") and "out of memory on device" in ln:
            continue
        if ln.startswith("gpuleak:") and re.search(r"error|failed|cannot|turned off|disabled", ln, re.I):
            case.failures.append(ln.strip()[:200])
    if first.startswith("SKIPPED"):
        case.skip = first
    else:
        try:
            if a.check in ("native", "preload"):
                native(case, a)
            else:
                torch_case(case, a)
        except Exception as e:  # noqa: BLE001 - the matrix must go on
            case.failures.append(f"checker error: {type(e).__name__}: {e}")
    if a.rc != 0:
        for ln in read(os.path.join(a.dir, "stderr")).splitlines()[-8:]:
            case.log("stderr: " + ln)

    for f in case.failures:
        case.log("FAIL: " + f)
    if case.skip and not case.failures:
        result, seen = "SKIP", case.skip
    else:
        result = "FAIL" if case.failures else "PASS"
        seen = " ".join(case.seen)
        # Failures that are no expected/seen pair (exit status, no capture...) go into the table too.
        others = [f for f in case.failures if not re.match(r"^[\w.+ ~/-]+: expected ", f)]
        if others:
            seen = (seen + " " if seen else "") + "[" + "; ".join(others) + "]"
    expected = " ".join(case.expected) or "-"
    clean = lambda s: s.replace("\t", " ").replace("|", "/").replace("\n", " ")  # noqa: E731
    print(f"RESULT\t{result}\t{clean(expected)}\t{clean(seen)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
