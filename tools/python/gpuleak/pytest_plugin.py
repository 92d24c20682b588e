"""pytest plugin: GPU memory limits per test, measured by gpuleak.

    pytest --gpuleak                         (installed package: loaded automatically)
    pytest -p gpuleak.pytest_plugin --gpuleak

    @pytest.mark.gpu_limit_leaks("1 MiB")
    @pytest.mark.gpu_limit_growth(per_iteration="1 KiB", warmup=2)
    @pytest.mark.gpu_limit_peak("2 GiB")

How it runs (docs/ci.md says the same for users):

1. Launcher. `pytest --gpuleak` in a process without the shim starts the same pytest command
   again under it (LD_PRELOAD=libgpuleak.so, GPULEAK_OUT=<temp>/session), waits, analyzes the
   session's capture with `gpuleak report --json`, prints a summary, and exits with the session's
   status. Under `gpuleak run -- pytest --gpuleak` the shim is already there and this step is
   skipped.
2. Session (under the shim). Every test is bracketed by gpuleak_mark("pytest start <nodeid>") and
   ("pytest end <nodeid>"), so the session's timeline shows which test allocated what.
3. Isolation. A capture is per process, so a test with a gpu_limit_* marker runs in a process of
   its own: `gpuleak run --out <temp>/tests/<n> -- python -m pytest <nodeid>`. Its outcome is the
   child's, and when the child passed, the reports of that process (and of any child of it that
   used CUDA) are weighed against the markers (gpuleak.limits). Fixtures of such a test run in
   that child, not in the session.

Without --gpuleak the markers are accepted and not checked. Where the shim or the gpuleak command
cannot be found, --gpuleak is a usage error naming GPULEAK_LIB / GPULEAK_CLI.
"""

import glob
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

import gpuleak
from gpuleak import limits
from gpuleak import report as report_module
from gpuleak._locate import NotFound, find_cli, find_shim

ROLE = "GPULEAK_PYTEST_ROLE"        # "session" or "isolated"; unset in the launcher
OUT = "GPULEAK_PYTEST_OUT"          # the run's folder: session/ and tests/<n>/
MARKERS = ("gpu_limit_leaks", "gpu_limit_growth", "gpu_limit_peak")
_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)


def pytest_addoption(parser):
    group = parser.getgroup("gpuleak", "GPU memory limits measured by gpuleak")
    group.addoption("--gpuleak", action="store_true", default=False,
                    help="run the session under the gpuleak shim and check gpu_limit_* markers")
    group.addoption("--gpuleak-out", default=None, metavar="DIR",
                    help="keep captures and reports here (default: a new temporary folder)")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu_limit_leaks(limit): fail when a call site leaves more than "
                                       "`limit` of GPU memory live at the end of the test (with --gpuleak)")
    config.addinivalue_line("markers", "gpu_limit_growth(per_iteration, warmup=None): fail when live GPU memory "
                                       "grows faster per gpuleak.iterate() iteration (with --gpuleak)")
    config.addinivalue_line("markers", "gpu_limit_peak(limit): fail when peak live GPU memory on a device "
                                       "exceeds `limit` (with --gpuleak)")


# ---- 1. the launcher ---------------------------------------------------------------------------

def _environment(shim, cli, out):
    env = dict(os.environ)
    preload = [p for p in env.get("LD_PRELOAD", "").split(":") if p and p != shim]
    env["LD_PRELOAD"] = ":".join([shim] + preload)
    env.setdefault("NVTX_INJECTION64_PATH", shim)
    env["GPULEAK_LIB"] = shim
    env["GPULEAK_CLI"] = cli
    env["GPULEAK_UNDER_RUN"] = "1"   # the plugin analyzes the capture, not the shim at exit
    env[OUT] = out
    env["PYTHONPATH"] = os.pathsep.join([_PACKAGE_PARENT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _analyze(cli, capture):
    proc = subprocess.run([cli, "report", "--json", "--quiet", capture], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)
    if proc.returncode != 0:
        return None, proc.stderr.strip()
    try:
        return report_module.from_dict(json.loads(proc.stdout), capture), None
    except (ValueError, report_module.ReportError) as e:
        return None, str(e)


def _launch(config):
    try:
        shim = find_shim()
        cli = find_cli(shim)
    except NotFound as e:
        raise pytest.UsageError("--gpuleak: %s" % e)
    out = config.option.gpuleak_out or tempfile.mkdtemp(prefix="gpuleak-pytest-")
    out = os.path.abspath(out)
    session_dir = os.path.join(out, "session")
    os.makedirs(session_dir, exist_ok=True)
    env = _environment(shim, cli, out)
    env["GPULEAK_OUT"] = session_dir
    env[ROLE] = "session"
    args = [sys.executable, "-m", "pytest", "-p", "gpuleak.pytest_plugin"] + list(config.invocation_params.args)
    status = subprocess.call(args, env=env, cwd=str(config.invocation_params.dir))
    lines = []
    for capture in sorted(glob.glob(os.path.join(session_dir, "*.gpuleak"))):
        rep, error = _analyze(cli, capture)
        if rep is None:
            lines.append("gpuleak: %s: %s" % (capture, error))
            continue
        peak = max((d.peak_live_bytes for d in rep.devices), default=0)
        lines.append("gpuleak: session %s: verdict %s, peak %s, %d leaking site(s)"
                     % (capture, rep.verdict, limits.format_size(peak), len(rep.leaks)))
        lines += ["  leak: %s %s/iteration" % (l.where, limits.format_size(l.bytes_per_iteration)) for l in rep.leaks]
        # Each test's loops judged on their own passes (report loops[], issue #33).
        for loop in rep.loops:
            if loop.test and loop.verdict in ("leak", "growth"):
                lines.append("  %s in %s (%d passes)%s" % (loop.verdict, loop.test, loop.passes,
                                                           ", released when it returned" if loop.released else ""))
    lines.append("gpuleak: captures and reports in %s" % out)
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    return status


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    if config.option.gpuleak and not os.environ.get(ROLE) and not gpuleak.active():
        return _launch(config)
    return None


# ---- 2. marks around every test ----------------------------------------------------------------

def _role(config):
    if os.environ.get(ROLE):
        return os.environ[ROLE]
    return "session" if config.option.gpuleak and gpuleak.active() else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    marking = _role(item.config) is not None
    if marking:
        gpuleak.mark("pytest start " + item.nodeid)
    yield
    if marking:
        gpuleak.mark("pytest end " + item.nodeid)


# ---- 3. isolated tests with limits -------------------------------------------------------------

def _limits(item):
    found = {}
    for name in MARKERS:
        m = item.get_closest_marker(name)
        if m is not None:
            found[name] = m
    return found


def _marker_value(marker, key, position=0, default=None):
    if key in marker.kwargs:
        return marker.kwargs[key]
    if len(marker.args) > position:
        return marker.args[position]
    if default is not None:
        return default
    raise pytest.UsageError("%s needs %s" % (marker.name, key))


def _weigh(found, reports):
    failures = []
    if "gpu_limit_leaks" in found:
        m = found["gpu_limit_leaks"]
        failures += limits.check_leaks(reports, limits.parse_size(_marker_value(m, "limit"), m.name))
    if "gpu_limit_growth" in found:
        m = found["gpu_limit_growth"]
        rate = limits.parse_size(_marker_value(m, "per_iteration"), m.name)
        warmup = m.kwargs.get("warmup", m.args[1] if len(m.args) > 1 else None)
        failures += limits.check_growth(reports, rate, warmup)
    if "gpu_limit_peak" in found:
        m = found["gpu_limit_peak"]
        failures += limits.check_peak(reports, limits.parse_size(_marker_value(m, "limit"), m.name))
    return failures


def _child_outcome(junit_path, returncode, output):
    """("passed"|"failed"|"skipped", text) of the child's one test, from its JUnit XML."""
    try:
        case = ElementTree.parse(junit_path).getroot().find(".//testcase")
    except (OSError, ElementTree.ParseError):
        case = None
    if case is None:
        return "failed", "the isolated run of this test reported nothing (exit status %d):\n%s" % (returncode, output)
    for tag in ("failure", "error"):
        node = case.find(tag)
        if node is not None:
            return "failed", node.text or node.get("message") or output
    skipped = case.find("skipped")
    if skipped is not None:
        return "skipped", skipped.get("message") or "skipped"
    return "passed", ""


def _run_isolated(item, found):
    out = os.environ.get(OUT) or tempfile.mkdtemp(prefix="gpuleak-pytest-")
    base = Path(out) / "tests"
    base.mkdir(parents=True, exist_ok=True)
    number = len(list(base.iterdir()))
    test_dir = base / ("%04d" % number)
    test_dir.mkdir()
    (test_dir / "nodeid").write_text(item.nodeid + "\n")
    junit = test_dir / "junit.xml"
    shim = os.environ.get("GPULEAK_LIB") or find_shim()
    cli = os.environ.get("GPULEAK_CLI") or find_cli(shim)
    env = _environment(shim, cli, out)
    env["LD_PRELOAD"] = ":".join(p for p in env["LD_PRELOAD"].split(":") if p != shim)  # gpuleak run adds it
    env.pop("GPULEAK_OUT", None)
    env.pop("GPULEAK_UNDER_RUN", None)
    env[ROLE] = "isolated"
    config = item.config
    cmd = [cli, "run", "--quiet", "--out", str(test_dir), "--", sys.executable, "-m", "pytest", "-p",
           "gpuleak.pytest_plugin", "-p", "no:cacheprovider", "-q", "--rootdir", str(config.rootpath),
           "--junitxml", str(junit)]
    if config.inipath:
        cmd += ["-c", str(config.inipath)]
    cmd.append(item.nodeid)
    start = time.time()
    proc = subprocess.run(cmd, cwd=str(config.rootpath), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    duration = time.time() - start
    outcome, text = _child_outcome(str(junit), proc.returncode, proc.stdout[-4000:])
    if outcome == "passed":
        reports = []
        for path in sorted(test_dir.glob("*.report.json")):
            try:
                reports.append(report_module.load(path))
            except report_module.ReportError as e:
                outcome, text = "failed", "gpuleak: %s" % e
        if outcome == "passed":
            failures = _weigh(found, reports)
            if failures:
                outcome = "failed"
                text = "\n".join(failures) + "\n(gpuleak reports: %s)" % test_dir
    return outcome, text, duration, test_dir


def _report(item, when, outcome, longrepr, duration, sections=()):
    from _pytest.reports import TestReport
    return TestReport(nodeid=item.nodeid, location=item.location, keywords={k: 1 for k in item.keywords},
                      outcome=outcome, longrepr=longrepr, when=when, sections=list(sections), duration=duration,
                      user_properties=list(item.user_properties))


def _isolated_protocol(item):
    found = _limits(item)
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    outcome, text, duration, test_dir = _run_isolated(item, found)
    section = [("gpuleak", "isolated run, reports in %s" % test_dir)]
    if outcome == "skipped":
        reports = [_report(item, "setup", "skipped", (str(item.path), (item.location[1] or 0) + 1, text), duration)]
    else:
        reports = [_report(item, "setup", "passed", None, 0.0),
                   _report(item, "call", outcome, text if outcome == "failed" else None, duration, section)]
    reports.append(_report(item, "teardown", "passed", None, 0.0))
    for rep in reports:
        ihook.pytest_runtest_logreport(report=rep)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def _wants_isolation(item):
    return _role(item.config) == "session" and bool(_limits(item))


class _Isolator:
    """Registered in the session: runs the marked tests in processes of their own."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if _wants_isolation(item):
            gpuleak.mark("pytest isolated " + item.nodeid)
            return _isolated_protocol(item)
        return None


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    if _role(session.config) == "session":
        session.config.pluginmanager.register(_Isolator(), "gpuleak-isolator")


_MARKED = pytest.StashKey[list]()


@pytest.hookimpl(trylast=True)  # after -k / -m deselection
def pytest_collection_modifyitems(session, config, items):
    config.stash[_MARKED] = [i.nodeid for i in items if _limits(i)]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    marked = config.stash.get(_MARKED, [])
    if marked and not config.option.gpuleak and not os.environ.get(ROLE):
        terminalreporter.write_line("gpuleak: %d test(s) have gpu_limit_* markers, not checked without --gpuleak"
                                    % len(marked))
