"""The pytest plugin on the fake GPU: `pytest --gpuleak` re-executes itself under the shim, runs
each test with a gpu_limit_* marker in a process of its own under `gpuleak run`, and fails the
tests whose limits the measured memory exceeds. Driven through pytester (pytest's own fixture),
each run a real subprocess."""
import pytest

from conftest import FAKE_GPU

TESTS = '''
import pytest

import fake_gpu
import gpuleak

kept = []


@pytest.mark.gpu_limit_leaks("1 MiB")
def test_leaks_too_much():
    kept.append(fake_gpu.malloc(4 << 20))


@pytest.mark.gpu_limit_leaks("8 MiB")
def test_leaks_within_limit():
    kept.append(fake_gpu.malloc(4 << 20))


@pytest.mark.gpu_limit_leaks("1 KiB")
def test_frees_everything():
    fake_gpu.free(fake_gpu.malloc(4 << 20))


@pytest.mark.gpu_limit_growth(per_iteration="1 KiB", warmup=2)
def test_grows_every_step():
    for _ in gpuleak.iterate(range(10), loop="train"):
        kept.append(fake_gpu.malloc(1 << 20))


@pytest.mark.gpu_limit_growth(per_iteration="1 KiB", warmup=2)
def test_grows_only_in_warmup():
    for step in gpuleak.iterate(range(10), loop="train"):
        if step < 2:
            kept.append(fake_gpu.malloc(1 << 20))
        fake_gpu.free(fake_gpu.malloc(1 << 20))


@pytest.mark.gpu_limit_peak("2 MiB")
def test_peak_too_high():
    p = fake_gpu.malloc(8 << 20)
    fake_gpu.free(p)


@pytest.mark.gpu_limit_peak("2 MiB")
def test_fails_on_its_own():
    assert 1 == 2, "the test's own failure"


@pytest.mark.gpu_limit_peak("2 MiB")
def test_skips_on_its_own():
    pytest.skip("not today")


def test_unmarked_runs_in_the_session():
    assert gpuleak.active()
    fake_gpu.free(fake_gpu.malloc(1 << 20))
'''


@pytest.fixture
def suite(pytester, gpu_env):
    pytester.makepyfile(fake_gpu=FAKE_GPU, test_gpu=TESTS)
    return pytester


def test_gpuleak_enforces_the_markers(suite):
    out = suite.path / "gpuleak-out"
    result = suite.runpytest_subprocess("-p", "gpuleak.pytest_plugin", "--gpuleak", "--gpuleak-out", str(out), "-rA")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 4, result.stdout.str()
    assert outcomes.get("passed") == 4, result.stdout.str()
    assert outcomes.get("skipped") == 1, result.stdout.str()
    for name in ("test_leaks_too_much", "test_grows_every_step", "test_peak_too_high", "test_fails_on_its_own"):
        result.stdout.fnmatch_lines(["FAILED test_gpu.py::%s*" % name])
    result.stdout.fnmatch_lines([
        "*gpu_limit_leaks: fake_gpu.py:* in malloc, called from test_gpu.py:* in test_leaks_too_much left 4 MiB live in 1 allocation on device 0 at the end of the "
        "test (limit 1 MiB)*",
        "*gpu_limit_growth: device 0 grows 1 MiB/iteration over * iterations after 2 of warm-up (limit 1 KiB/iteration)*",
        "*gpu_limit_peak: device 0 peaked at 8 MiB live (limit 2 MiB)*",
        "*the test's own failure*",
    ])
    # The launcher's summary of the whole session's capture.
    result.stdout.fnmatch_lines(["gpuleak: session *.gpuleak: verdict *", "gpuleak: captures and reports in *"])
    assert result.ret == 1
    # One folder per isolated test, each with its own report.
    isolated = sorted((out / "tests").iterdir())
    assert len(isolated) == 8
    assert all(list(d.glob("*.junit.xml")) or (d / "junit.xml").exists() for d in isolated)


def test_markers_are_not_checked_without_the_option(suite):
    result = suite.runpytest_subprocess("-p", "gpuleak.pytest_plugin", "-k", "leaks_too_much or peak_too_high")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["gpuleak: 2 test(s) have gpu_limit_* markers, not checked without --gpuleak"])


def test_missing_shim_is_a_usage_error(suite, monkeypatch, tmp_path):
    monkeypatch.setenv("GPULEAK_LIB", str(tmp_path / "nowhere" / "libgpuleak.so"))
    result = suite.runpytest_subprocess("-p", "gpuleak.pytest_plugin", "--gpuleak")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpuleak: GPULEAK_LIB=*nowhere/libgpuleak.so is not a file*"])
