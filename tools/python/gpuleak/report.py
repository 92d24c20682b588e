"""Read a gpuleak report ("schema": "gpuleak.report/1", docs/report-format.md) into dataclasses.

    from gpuleak import report
    r = report.load("gpuleak-out/train.py.4242.report.json")
    if r.verdict == "leak":
        for leak in r.leaks:
            print(leak.where, leak.bytes_per_iteration)

Like `gpuleak check`, the reader refuses what it cannot use, with a one-line ReportError: a missing
file, text that is not JSON or is cut short, JSON that is not a gpuleak report, a newer major
schema. Fields it does not know are ignored (the version policy only adds fields); fields a file
lacks are None (or empty). Each dataclass keeps the object it was read from in `raw`.
"""

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

SCHEMA_MAJOR = 1
SCHEMA = "gpuleak.report/%d" % SCHEMA_MAJOR
VERDICTS = ("clean", "inconclusive", "growth", "leak")  # by severity


class ReportError(ValueError):
    """A report file that cannot be used (one line, names the file)."""


@dataclass
class Frame:
    kind: Optional[str] = None  # "native" or "python"
    function: Optional[str] = None
    file: Optional[str] = None
    line: Optional[int] = None
    module: Optional[str] = None
    address: Optional[str] = None
    build_id: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def location(self):
        """"file:line", or None without both."""
        return "%s:%d" % (self.file, self.line) if self.file and self.line is not None else None


def _user_frame(stack):
    """For reports written before headlines: the innermost Python frame with a file and line,
    else the innermost native one. Newer reports say which frame to show (headline)."""
    for kind in ("python", None):
        for f in stack:
            if (kind is None or f.kind == kind) and f.location:
                return f
    return None


def _where(stack, headline=None):
    """The report's headline text ("train.py:41 in train_step (via ...)"), as the analysis chose
    it; a report from before headlines: "function (file:line)" of _user_frame(stack)."""
    if isinstance(headline, dict) and isinstance(headline.get("text"), str) and headline["text"]:
        caller = headline.get("caller")
        if isinstance(caller, dict) and isinstance(caller.get("text"), str) and caller["text"]:
            return headline["text"] + ", called from " + caller["text"]
        return headline["text"]
    f = _user_frame(stack)
    if f is not None:
        return "%s (%s)" % (f.function or "?", f.location)
    for f in stack:
        if f.function:
            return f.function + (" in " + f.module if f.module else "")
    return "unknown site"


@dataclass
class Forecast:
    iterations_left: Optional[int] = None
    seconds_left: Optional[float] = None
    bytes_per_iteration: Optional[float] = None
    held_elsewhere_bytes: Optional[int] = None  # (1.3) NVML's bytes beyond the tracked live, not free
    pool_free_bytes: Optional[int] = None  # (1.3) free inside a framework's pool at exit, counted as free
    fills: Optional[str] = None  # (1.3) "device", or "jax_arena": the forecast is for JAX's arena filling
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class Device:
    index: int = 0
    name: Optional[str] = None
    total_bytes: Optional[int] = None
    peak_live_bytes: int = 0
    live_at_exit_bytes: int = 0
    nvml_used_bytes: Optional[int] = None
    untracked_bytes: Optional[int] = None
    alloc_count: int = 0
    free_count: int = 0
    verdict: Optional[str] = None
    growth_bytes_per_iteration: float = 0
    growth_r2: float = 0
    growth_fit_quality: Optional[float] = None
    # Entry k: the analysis's Theil-Sen slope with the first k primary iterations left out (empty
    # in older reports, and when the device was not fitted).
    growth_after_warmup: List[float] = field(default_factory=list)
    nvml_device_used_bytes: Optional[int] = None
    forecast: Optional[Forecast] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class IterationDevice:
    index: int = 0
    live_end_bytes: int = 0
    peak_bytes: int = 0
    allocated_bytes: int = 0
    freed_bytes: int = 0
    alloc_count: int = 0
    free_count: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class Iteration:
    index: int = 0
    loop: Optional[str] = None
    primary: bool = False
    start_ns: Optional[int] = None
    end_ns: Optional[int] = None
    devices: List[IterationDevice] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class Leak:
    site_id: str = ""
    device: int = 0
    bytes_per_iteration: float = 0
    live_bytes: int = 0  # at the end of the last primary iteration
    live_count: int = 0
    live_at_exit_bytes: Optional[int] = None  # at the end of the capture (absent before issue #3's fix)
    live_at_exit_count: Optional[int] = None
    first_iteration: Optional[int] = None
    confidence: Optional[float] = None
    fit_quality: Optional[float] = None
    r2: Optional[float] = None
    iterations_observed: Optional[int] = None
    live_by_iteration: List[int] = field(default_factory=list)
    stack: List[Frame] = field(default_factory=list)
    headline: Optional[Dict[str, Any]] = None  # the frame to show (docs/report-format.md)
    loop: Optional[str] = None  # (1.1) the loop whose passes it leaks over (a loops[].name)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def where(self):
        """Where to look: the headline's text (the user's own line, with the library code it called)."""
        return _where(self.stack, self.headline)


@dataclass
class Loop:
    """(gpuleak.report/1.1, issue #33) One loop of the run judged on its own passes."""
    name: str = ""
    kind: str = ""
    file: Optional[str] = None
    function: Optional[str] = None
    first_line: Optional[int] = None
    test: Optional[str] = None  # the pytest test that ran it ("test_a.py::test_b")
    primary: bool = False
    passes: int = 0
    verdict: str = "clean"
    released: bool = False
    leak_groups: List[Dict[str, Any]] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class LiveSite:
    site_id: str = ""
    device: int = 0
    live_bytes: int = 0
    live_count: int = 0
    stack: List[Frame] = field(default_factory=list)
    headline: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def where(self):
        return _where(self.stack, self.headline)


@dataclass
class OomEvent:
    t_ns: Optional[int] = None
    device: int = 0
    requested_bytes: int = 0
    api: Optional[str] = None
    result: Optional[int] = None
    free_bytes: int = 0
    total_bytes: int = 0
    live_bytes: int = 0
    live_count: int = 0
    recovered: bool = False
    site_id: Optional[str] = None
    stack: List[Frame] = field(default_factory=list)
    live_by_site: List[Dict[str, Any]] = field(default_factory=list)
    history: List[Dict[str, Any]] = field(default_factory=list)
    headline: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def where(self):
        return _where(self.stack, self.headline)


@dataclass
class Capture:
    cupti: Optional[str] = None
    events: Optional[int] = None
    events_dropped: int = 0
    tracking_disabled: Optional[str] = None
    truncated: bool = False
    clean_exit: Optional[bool] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class Run:
    command: List[str] = field(default_factory=list)
    program: Optional[str] = None
    pid: Optional[int] = None
    ppid: Optional[int] = None
    rank: Optional[int] = None
    host: Optional[str] = None
    start_time: Optional[str] = None
    duration_ns: Optional[int] = None
    gpuleak_version: Optional[str] = None
    cuda_driver_version: Optional[int] = None
    allocator_env: Dict[str, str] = field(default_factory=dict)
    allocator_mode: Optional[str] = None
    pool_tracker: Optional[str] = None  # a framework allocator's tracker (PyTorch's), when its blocks were seen
    unwinder: Optional[str] = None
    stack_depth: Optional[int] = None
    capture: Capture = field(default_factory=Capture)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class Analysis:
    primary_loop: Optional[str] = None
    primary_iterations: int = 0
    warmup_iterations: int = 0
    allocations: int = 0
    frees: int = 0
    failed_allocations: int = 0
    unmatched_frees: int = 0
    graph_reservations: int = 0
    not_owned: int = 0
    context_resets: int = 0
    pool_blocks: int = 0
    host_pinned_peak_bytes: int = 0
    host_pinned_live_at_exit_bytes: int = 0
    live_at_exit_sites: int = 0
    warnings: List[str] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class Report:
    schema: str = SCHEMA
    path: Optional[str] = None
    run: Run = field(default_factory=Run)
    verdict: str = "clean"
    iteration_source: str = "none"
    analysis: Analysis = field(default_factory=Analysis)
    devices: List[Device] = field(default_factory=list)
    iterations: List[Iteration] = field(default_factory=list)
    leaks: List[Leak] = field(default_factory=list)
    live_at_exit: List[LiveSite] = field(default_factory=list)
    advice: List[Dict[str, Any]] = field(default_factory=list)
    # A framework allocator's segments and the tensors in them (docs/report-format.md "segments").
    segments: List[Dict[str, Any]] = field(default_factory=list)
    oom: Optional[List[OomEvent]] = None  # None: no out-of-memory; else newest first
    loops: List[Loop] = field(default_factory=list)  # (1.1) every judged loop; empty in older reports
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def device(self, index):
        """The Device with this index, or None."""
        return next((d for d in self.devices if d.index == index), None)

    def primary_iterations(self):
        """The iterations the verdicts are computed on, in order."""
        return [it for it in self.iterations if it.primary]

    def live_series(self, device=0, warmup=0):
        """Live bytes of `device` at the end of each primary iteration from index `warmup` on."""
        out = []
        for position, it in enumerate(self.primary_iterations()):
            if position < warmup:
                continue
            for d in it.devices:
                if d.index == device:
                    out.append(d.live_end_bytes)
        return out


# ---- reading -----------------------------------------------------------------------------------

_NESTED = {
    (Device, "forecast"): Forecast,
    (Iteration, "devices"): IterationDevice,
    (Leak, "stack"): Frame,
    (LiveSite, "stack"): Frame,
    (OomEvent, "stack"): Frame,
    (Run, "capture"): Capture,
    (Report, "run"): Run,
    (Report, "analysis"): Analysis,
    (Report, "devices"): Device,
    (Report, "iterations"): Iteration,
    (Report, "leaks"): Leak,
    (Report, "live_at_exit"): LiveSite,
    (Report, "loops"): Loop,
}


def _build(cls, obj, where, path):
    if not isinstance(obj, dict):
        raise ReportError("%s: malformed report: %s is not an object" % (path, where or "the document"))
    values = {"raw": obj}
    for f in dataclasses.fields(cls):
        if f.name in ("raw", "path") or f.name not in obj or obj[f.name] is None:
            continue
        value = obj[f.name]
        inner = _NESTED.get((cls, f.name))
        here = "%s.%s" % (where, f.name) if where else f.name
        if inner is not None and isinstance(value, list):
            value = [_build(inner, v, "%s[%d]" % (here, i), path) for i, v in enumerate(value)]
        elif inner is not None:
            value = _build(inner, value, here, path)
        values[f.name] = value
    return cls(**values)


def _check_schema(doc, path):
    schema = doc.get("schema") if isinstance(doc, dict) else None
    prefix = "gpuleak.report/"
    if not isinstance(schema, str) or not schema.startswith(prefix):
        raise ReportError('%s: not a gpuleak report (no "schema": "%s")' % (path, SCHEMA))
    major = schema[len(prefix):].split(".", 1)[0]
    if not major.isdigit() or int(major) < 1:
        raise ReportError('%s: unknown report schema "%s" (this gpuleak reads %s)' % (path, schema, SCHEMA))
    if int(major) > SCHEMA_MAJOR:
        raise ReportError("%s: report schema %s is newer than this gpuleak reads (%s); upgrade gpuleak"
                          % (path, schema, SCHEMA))


def from_dict(doc, path="<report>"):
    """A Report from an already parsed document."""
    _check_schema(doc, path)
    if doc.get("verdict") not in VERDICTS:
        raise ReportError("%s: malformed report: verdict %r is not one of %s" % (path, doc.get("verdict"), ", ".join(VERDICTS)))
    oom = doc.get("oom")
    body = {k: v for k, v in doc.items() if k != "oom"}
    rep = _build(Report, body, "", path)
    rep.raw = doc
    rep.path = path
    if isinstance(oom, dict):
        events = oom.get("events") or []
        rep.oom = [_build(OomEvent, e, "oom.events[%d]" % i, path) for i, e in enumerate(events)]
    elif oom is not None:
        raise ReportError("%s: malformed report: oom is not an object" % path)
    return rep


def loads(text, path="<string>"):
    """A Report from JSON text; `path` names it in errors."""
    if not text.strip():
        raise ReportError("%s: empty file, not JSON" % path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        # An error at the end of the text, or a string still open there: it stopped inside the
        # document (cut short).
        if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):
            raise ReportError("%s: truncated JSON (the document ends early, at byte %d)"
                              % (path, len(text.encode("utf-8")))) from None
        raise ReportError("%s: not valid JSON (%s at line %d, column %d)" % (path, e.msg, e.lineno, e.colno)) from None
    return from_dict(doc, path)


def load(path):
    """A Report from a .report.json file. Raises ReportError (a ValueError) for unusable files."""
    path = str(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ReportError("cannot read %s: %s" % (path, e.strerror or e)) from None
    return loads(data.decode("utf-8", "replace"), path)
