"""gpuleak.limits: sizes and the markers' checks, on synthetic reports."""
import pytest

from gpuleak import limits, report

MiB = 1 << 20


def theil_sen(values):
    """The analysis's slope, written here only to build the reports' fits (docs/report-format.md)."""
    s = sorted((values[j] - values[i]) / float(j - i) for i in range(len(values)) for j in range(i + 1, len(values)))
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2.0


def make(live_series, leaks=(), live_at_exit=(), peak=100 * MiB, warmup=1, fits=None):
    if fits is None:
        fits = [theil_sen(live_series[k:]) for k in range(len(live_series) - 1)]
    doc = {
        "schema": "gpuleak.report/1", "verdict": "clean", "iteration_source": "api",
        "analysis": {"warmup_iterations": warmup},
        "devices": [{"index": 0, "peak_live_bytes": peak, "live_at_exit_bytes": 0, "verdict": "clean",
                     "growth_after_warmup": fits,
                     "growth_bytes_per_iteration": fits[warmup] if warmup < len(fits) else 0}],
        "iterations": [{"index": i, "loop": "train", "primary": True,
                        "devices": [{"index": 0, "live_end_bytes": v, "peak_bytes": v}]}
                       for i, v in enumerate(live_series)],
        "leaks": list(leaks), "live_at_exit": list(live_at_exit),
    }
    return report.from_dict(doc, "t.json")


def site(live, function="keep_batch"):
    return {"site_id": "aa", "device": 0, "live_bytes": live, "live_count": 3,
            "stack": [{"kind": "python", "function": function, "file": "/t/test_x.py", "line": 12}]}


@pytest.mark.parametrize("text,expected", [
    ("100", 100), ("512KiB", 512 * 1024), ("1 MiB", MiB), ("2GB", 2 * 10 ** 9), ("1.5 giB", 3 * 2 ** 29),
    ("4K", 4096), (0, 0), (123, 123)])
def test_sizes(text, expected):
    assert limits.parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "MiB", "-1", "1 MiBs", "lots", -5, True, "1e3", "1Mb", "1.5 gib"])
def test_bad_sizes(bad):
    with pytest.raises(ValueError):
        limits.parse_size(bad, "gpu_limit_peak")


def test_bits_are_refused_with_the_bytes_spelling():
    with pytest.raises(ValueError, match="a lowercase b is bits; for bytes write MB"):
        limits.parse_size("1Mb", "gpu_limit_peak")


def test_format():
    assert limits.format_size(MiB) == "1 MiB"
    assert limits.format_size(1536) == "1.5 KiB"
    assert limits.format_size(12) == "12 B"


def test_leaks_by_site_live_at_the_end():
    r = make([0, 0, 0], live_at_exit=[site(3 * MiB)])
    assert limits.check_leaks([r], 4 * MiB) == []
    (failure,) = limits.check_leaks([r], MiB)
    assert failure == ("gpu_limit_leaks: keep_batch (/t/test_x.py:12) left 3 MiB live in 3 allocations on device 0 "
                       "at the end of the test (limit 1 MiB) [site aa]")


def test_growth_after_warmup():
    r = make([50 * MiB, 51 * MiB, 52 * MiB, 52 * MiB, 52 * MiB])
    assert limits.check_growth([r], 1024, warmup=2) == []          # flat after two warm-up steps
    (failure,) = limits.check_growth([r], 1024, warmup=0)
    assert failure.startswith("gpu_limit_growth: device 0 grows ")
    assert "(limit 1 KiB/iteration)" in failure
    # The analysis's warm-up (1) when the marker gives none.
    assert limits.check_growth([r], 1024) != []


def test_growth_is_the_analysis_fit_not_a_slope_of_its_own():
    # One spike at the last iteration: a least-squares slope says it grows, the analysis's robust
    # fit says it does not; the marker reads the analysis (issue #28).
    r = make([50 * MiB] * 5 + [90 * MiB])
    assert r.devices[0].growth_after_warmup[1] == 0
    assert limits.check_growth([r], 1024) == []
    assert limits.check_growth([r], 1024, warmup=0) == []
    # The report's numbers decide, whatever the series looks like.
    r = make([50 * MiB] * 4, fits=[2048, 2048, 2048])
    (failure,) = limits.check_growth([r], 1024, warmup=1)
    assert "grows 2 KiB/iteration over 3 iterations after 1 of warm-up" in failure


def test_growth_in_an_older_report_without_fits_per_warmup():
    r = make([50 * MiB, 51 * MiB, 52 * MiB], fits=[])
    r.devices[0].growth_bytes_per_iteration = MiB
    (failure,) = limits.check_growth([r], 1024)
    assert "grows 1 MiB/iteration" in failure
    (failure,) = limits.check_growth([r], 1024, warmup=0)
    assert "has no fits per warm-up" in failure


def test_growth_needs_iterations():
    (failure,) = limits.check_growth([make([MiB])], 1024, warmup=0)
    assert "at least 2 are needed" in failure
    assert limits.check_growth([], 1024) == []  # no CUDA at all: nothing grew


def test_peak():
    r = make([0], peak=3 * 2 ** 30)
    assert limits.check_peak([r], 4 * 2 ** 30) == []
    assert limits.check_peak([r], 2 * 2 ** 30) == ["gpu_limit_peak: device 0 peaked at 3 GiB live (limit 2 GiB)"]
