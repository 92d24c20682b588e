"""gpuleak._hooks without a GPU (issue #28): torch.cuda.empty_cache() marks its caller's line for
the cache_thrash advice and stays the same function otherwise; a --loop that never began an
iteration says so at exit. Written without pytest fixtures, so that a machine without pytest can
run them with plain python3 too (python3 tests/python/test_hooks_story.py)."""
import io
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python"))

import gpuleak  # noqa: E402
from gpuleak import _hooks  # noqa: E402


def fake_torch(calls):
    def empty_cache():
        """PyTorch's docstring."""
        calls.append("emptied")
        return "result"

    memory = types.SimpleNamespace(empty_cache=empty_cache)
    cuda = types.SimpleNamespace(empty_cache=empty_cache, memory=memory)
    return types.SimpleNamespace(cuda=cuda)


def test_empty_cache_marks_its_callers_line_then_runs():
    calls, marks = [], []
    torch = fake_torch(calls)
    original_mark = gpuleak.mark
    gpuleak.mark = marks.append
    try:
        _hooks.watch_empty_cache(torch)
        _hooks.watch_empty_cache(torch)  # a second hook (torch imported twice) wraps nothing again
        line = sys._getframe().f_lineno + 1
        result = torch.cuda.empty_cache()
    finally:
        gpuleak.mark = original_mark
    assert result == "result" and calls == ["emptied"]
    assert marks == ["%s%s:%d" % (_hooks.EMPTY_CACHE_MARK, __file__, line)]
    # the analysis parses this prefix: src/analysis/advice.h kEmptyCacheMark
    assert _hooks.EMPTY_CACHE_MARK == "torch.cuda.empty_cache() at "
    assert torch.cuda.memory.empty_cache is torch.cuda.empty_cache
    assert torch.cuda.empty_cache.__doc__ == "PyTorch's docstring."


def test_empty_cache_runs_even_when_marking_fails():
    calls = []
    torch = fake_torch(calls)
    original_mark = gpuleak.mark

    def broken(label):
        raise OSError("no shim")

    gpuleak.mark = broken
    try:
        _hooks.watch_empty_cache(torch)
        torch.cuda.empty_cache()
    finally:
        gpuleak.mark = original_mark
    assert calls == ["emptied"]


def said(loop, spec):
    err, sys.stderr = sys.stderr, io.StringIO()
    try:
        _hooks.said_if_never_ran(loop, spec)
        return sys.stderr.getvalue()
    finally:
        sys.stderr = err


def test_a_loop_that_never_ran_is_said_at_exit():
    loop = _hooks.FunctionLoop("nosuchfunc")
    text = said(loop, "nosuchfunc")
    assert text.startswith("gpuleak: --loop nosuchfunc: no function of that name ran") and text.count("\n") == 1
    line = _hooks.LineLoop("/nowhere/train.py", 12)
    assert "--loop /nowhere/train.py:12: no iteration began at that line" in said(line, "/nowhere/train.py:12")
    original_begin = gpuleak._begin
    gpuleak._begin = lambda label: None
    try:
        loop.on_start()
    finally:
        gpuleak._begin = original_begin
    assert said(loop, "nosuchfunc") == ""


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
            print("ok", name)
