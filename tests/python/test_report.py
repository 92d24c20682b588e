"""gpuleak.report: reports into dataclasses, and one-line errors for unusable files (the same
words as `gpuleak check`)."""
import json

import pytest

from gpuleak import report

EXAMPLE = {
    "schema": "gpuleak.report/1",
    "run": {"command": ["python3", "train.py"], "program": "train.py", "pid": 48213, "rank": None,
            "capture": {"cupti": "off", "events": 10, "events_dropped": 0, "tracking_disabled": None,
                        "truncated": False, "clean_exit": True},
            "allocator_env": {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}, "a_future_field": [1]},
    "verdict": "leak", "iteration_source": "nvtx",
    "analysis": {"primary_loop": "step", "primary_iterations": 3, "warmup_iterations": 1, "warnings": []},
    "devices": [{"index": 0, "name": "NVIDIA H200", "total_bytes": 150754820096, "peak_live_bytes": 9865003008,
                 "live_at_exit_bytes": 2281701376, "verdict": "leak", "growth_bytes_per_iteration": 18874368,
                 "forecast": {"iterations_left": 7702, "seconds_left": 3544.1, "bytes_per_iteration": 18874368,
                              "held_elsewhere_bytes": 536870912, "pool_free_bytes": 0, "fills": "device"}}],
    "iterations": [{"index": i, "loop": "step", "primary": True, "start_ns": i, "end_ns": i + 1,
                    "devices": [{"index": 0, "live_end_bytes": 100 * (i + 1), "peak_bytes": 0}]} for i in range(3)],
    "leaks": [{"site_id": "5f3c9a1e2b7d4410", "device": 0, "bytes_per_iteration": 18874368, "live_bytes": 1509949440,
               "live_count": 400, "first_iteration": 0, "confidence": 0.98, "live_by_iteration": [1, 2, 3],
               "stack": [{"kind": "native", "function": "at::native::empty_cuda(...)", "file": "aten/Empty.cpp",
                          "line": 51, "module": "libtorch_cuda.so", "address": "0x7f2a91c0e4d3", "build_id": None},
                         {"kind": "python", "function": "train_step", "file": "/home/ana/train.py", "line": 42,
                          "module": None}]}],
    "live_at_exit": [],
    "advice": [],
    "oom": {"events": [{"t_ns": 5, "device": 0, "requested_bytes": 4096, "api": "cuMemAlloc_v2", "result": 2,
                        "free_bytes": 0, "total_bytes": 1, "live_bytes": 1, "live_count": 1, "recovered": True,
                        "site_id": "ab", "stack": [], "live_by_site": [], "history": []}]},
}


def test_reads_into_dataclasses(tmp_path):
    path = tmp_path / "train.report.json"
    path.write_text(json.dumps(EXAMPLE))
    r = report.load(path)
    assert isinstance(r, report.Report)
    assert r.path == str(path)
    assert r.verdict == "leak" and r.iteration_source == "nvtx"
    assert r.run.program == "train.py" and r.run.capture.cupti == "off"
    assert r.run.allocator_env["PYTORCH_CUDA_ALLOC_CONF"] == "backend:cudaMallocAsync"
    d = r.device(0)
    assert isinstance(d, report.Device) and d.name == "NVIDIA H200"
    assert isinstance(d.forecast, report.Forecast) and d.forecast.iterations_left == 7702
    assert d.forecast.held_elsewhere_bytes == 536870912 and d.forecast.fills == "device"
    assert r.device(3) is None
    (leak,) = r.leaks
    assert isinstance(leak, report.Leak) and isinstance(leak.stack[0], report.Frame)
    assert leak.where == "train_step (/home/ana/train.py:42)"  # the Python frame, as gpuleak check says
    assert leak.stack[0].location == "aten/Empty.cpp:51"
    assert r.live_series(0, warmup=1) == [200, 300]
    assert isinstance(r.oom[0], report.OomEvent) and r.oom[0].recovered
    assert r.analysis.warmup_iterations == 1
    assert r.raw["run"]["a_future_field"] == [1]


def test_absent_fields_are_none_or_empty():
    r = report.from_dict({"schema": "gpuleak.report/1", "verdict": "clean", "devices": []}, "min.json")
    assert r.leaks == [] and r.oom is None and r.run.program is None and r.analysis.warmup_iterations == 0


def test_segments_and_the_pool_tracker():
    doc = dict(EXAMPLE, segments=[{"device": 0, "site_id": "aa", "count": 3, "live_at_exit_bytes": 62914560,
                                   "blocks": [{"site_id": "bb", "live_at_exit_bytes": 1048576}]}])
    doc["run"] = dict(EXAMPLE["run"], pool_tracker="torch 2.11.0+cu130 CUDACachingAllocator trace tracker")
    doc["analysis"] = dict(EXAMPLE["analysis"], pool_blocks=160)
    r = report.from_dict(doc, "seg.json")
    assert r.run.pool_tracker.startswith("torch 2.11.0") and r.analysis.pool_blocks == 160
    assert r.segments[0]["count"] == 3 and r.segments[0]["blocks"][0]["site_id"] == "bb"
    assert report.from_dict(EXAMPLE, "old.json").segments == []  # reports before segments


def error_of(tmp_path, name, text):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(report.ReportError) as e:
        report.load(path)
    return str(e.value).replace(str(path), "FILE")


def test_one_line_errors(tmp_path):
    full = json.dumps(EXAMPLE, indent=2)
    assert error_of(tmp_path, "missing.json", None) == "cannot read FILE: No such file or directory"
    assert error_of(tmp_path, "cut.json", full[:300]) == "FILE: truncated JSON (the document ends early, at byte 300)"
    assert error_of(tmp_path, "pkg.json", '{"name": "x"}') == 'FILE: not a gpuleak report (no "schema": "gpuleak.report/1")'
    newer = dict(EXAMPLE, schema="gpuleak.report/2")
    assert error_of(tmp_path, "v2.json", json.dumps(newer)) == (
        "FILE: report schema gpuleak.report/2 is newer than this gpuleak reads (gpuleak.report/1); upgrade gpuleak")
    assert error_of(tmp_path, "empty.json", "\n") == "FILE: empty file, not JSON"
    assert error_of(tmp_path, "bad.json", '{"a": 1]').startswith("FILE: not valid JSON (")
    bad_verdict = dict(EXAMPLE, verdict="doom")
    assert "verdict 'doom'" in error_of(tmp_path, "verdict.json", json.dumps(bad_verdict))
    assert isinstance(report.ReportError("x"), ValueError)


def test_where_is_the_reports_headline(tmp_path):
    """A report with headlines: `where` is the analysis's choice, never a frame picked here."""
    doc = json.loads(json.dumps(EXAMPLE))
    text = "train.py:42 in train_step (via empty_cuda, libtorch_cuda.so)"
    doc["leaks"][0]["headline"] = {"kind": "python", "function": "train_step", "file": "/home/ana/train.py",
                                   "line": 42, "module": None, "user": True, "text": text,
                                   "via": {"function": "empty_cuda", "file": None, "line": None,
                                           "module": "libtorch_cuda.so"}}
    path = tmp_path / "headline.report.json"
    path.write_text(json.dumps(doc))
    (leak,) = report.load(path).leaks
    assert leak.where == text
    assert leak.headline["user"] is True
