"""A test suite with one leaking test among clean ones (issue #33), run as pytest would run it: the
test functions are called from a runner's code (fake_frameworks/site-packages/minitest.py, or
pytest itself: `python -m pytest test_loops_suite.py`), so each is a callback and the loop inside
it is tagged with the test. `test_leaky_step` keeps KEPT bytes per step at `# @keep_test`, and
frees them when it returns: the leak is released when the test returns and is still its leak.
Run directly (`python test_loops_suite.py`), the runner in fake_frameworks runs the tests."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_frameworks", "site-packages"))
import steplib  # noqa: E402

STEPS = 40
KEPT = 1 << 20
OUT = 1 << 18


def test_clean_forward():
    for i in range(STEPS):
        steplib.step(None, i, OUT).free()  # @clean_forward


def test_leaky_step():
    history = []
    for i in range(STEPS):
        history.append(steplib.step(None, i, KEPT))  # @keep_test
    for h in history:
        h.free()


def test_clean_backward():
    for i in range(STEPS):
        out = steplib.step(None, i, OUT)  # @clean_backward
        out.free()


def test_no_loop():
    steplib.empty(OUT).free()


if __name__ == "__main__":
    import minitest
    sys.exit(minitest.main(sys.modules[__name__]))
