"""The loop observer (tools/python/gpuleak/_observe.py) against a stand-in shim, on Python 3.12+:
what it defines and sends for nested loops, a pure-Python loop let go after a few passes, a user
function called by a library from inside the user's loop (no callback of its own) and from outside
(a callback), a handler met on four threads at once (one callback), and a failure inside it (the
program runs on; one stderr line). Exit 0 pass, 1 fail, 77 on an interpreter without
sys.monitoring."""
import io
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "python"))
sys.path.insert(0, os.path.join(HERE, "fake_frameworks", "site-packages"))
if not hasattr(sys, "monitoring"):
    print("skipped: no sys.monitoring on Python %d.%d" % sys.version_info[:2])
    sys.exit(77)
from gpuleak import _observe  # noqa: E402
import libcall  # noqa: E402  (a library that calls back: under a site-packages folder)

CLOCK = [0]
defined = {}
passes = []
notes = []


class StandIn:
    fail = False

    def define(self, id, parent, kind, file, function, first, last, depth):
        defined[id] = dict(parent=parent, kind=kind, function=function.decode(), first=first, last=last, depth=depth)

    def passed(self, id, op, task_high, task_low):
        if StandIn.fail:
            raise RuntimeError("stand-in failure")
        passes.append((id, op))
        return CLOCK[0]

    def observer(self, method, note):
        notes.append((method, note.decode()))

    def present(self):
        return True


def alloc():
    CLOCK[0] += 1


def serve():
    for r in range(3):
        alloc()
        for t in range(4):
            alloc()


def hot():
    total = 0
    for i in range(10000):
        total += i
    return total


class Layer:
    def forward(self):
        alloc()


class Model:
    def training_step(self):
        alloc()


def guarded_training():
    # A try/except that falls through puts, in Python 3.12+, a backward jump at the end of the
    # function (from the handler to the code after the try): no loop, and no parent of the step loop.
    try:
        import no_such_module_here  # noqa: F401
    except ImportError:
        pass
    for step in range(6):
        alloc()
    try:
        raise KeyError("handled")
    except KeyError:
        pass


def stepping():
    layers = [Layer() for _ in range(3)]
    for i in range(12):
        libcall.call_each(layers, "forward")  # the library calls Layer.forward inside the user's loop




def handler():
    alloc()


def four_threads_at_once():
    """A handler started on four threads at once (issue #33): learning its code object takes a
    while (here 50 ms, the GIL released), so all four meet it unlearned; one callback must come
    of it, with every thread's start and return."""
    learn_slowly = _observe.CodeInfo

    class SlowCodeInfo(learn_slowly):
        __slots__ = ()

        def __init__(self, code, dis):
            time.sleep(0.05)
            super().__init__(code, dis)

    _observe.CodeInfo = SlowCodeInfo
    try:
        threads = [threading.Thread(target=handler) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        _observe.CodeInfo = learn_slowly
    cb = [id for id, d in list(defined.items()) if d["function"] == "handler"]
    check(len(cb) == 1, "one callback for a handler met on four threads at once: %d defined" % len(cb))
    check(sum(1 for p in passes if p == (cb[0], 2)) == 4 and sum(1 for p in passes if p == (cb[0], 3)) == 4,
          "4 starts and 4 returns of the handler")


def check(ok, what):
    if not ok:
        print("FAIL: " + what)
        print("defined:", defined)
        print("passes:", passes[:50])
        sys.exit(1)


def main():
    assert _observe.install(StandIn()) is not None
    check(notes and notes[0][0] == 1 and "sys.monitoring" in notes[0][1], "the observer's note: %r" % notes)
    serve()
    by_fn = {}
    for id, d in list(defined.items()):
        by_fn.setdefault(d["function"], []).append((id, d))
    loops = sorted(by_fn.get("serve", []), key=lambda x: x[1]["depth"])
    check(len(loops) == 2, "two loop levels in serve")
    (outer, o), (inner, i) = loops
    check(i["parent"] == outer and i["depth"] == 1 and o["depth"] == 0, "the token loop runs in the request loop")
    check(sum(1 for p in passes if p == (outer, 1)) == 3 and sum(1 for p in passes if p == (inner, 1)) == 12,
          "3 request passes and 12 token passes")
    guarded_training()
    guarded = [d for d in list(defined.values()) if d["function"] == "guarded_training"]
    check(len(guarded) == 1 and guarded[0]["depth"] == 0 and guarded[0]["parent"] == 0,
          "one loop in guarded_training, at depth 0 with no parent (an except handler's jump is no loop): %r"
          % guarded)
    hot()
    hot_id = [id for id, d in list(defined.items()) if d["function"] == "hot"]
    check(len(hot_id) == 1, "the hot loop is defined")
    n = sum(1 for p in passes if p[0] == hot_id[0])
    check(n <= _observe.QUIET + 1, "the hot loop is let go after %d quiet passes (%d sent)" % (_observe.QUIET, n))
    stepping()
    check(not [d for d in list(defined.values()) if d["function"] == "Layer.forward"],
          "Layer.forward, called by the library inside the user's loop, is no callback")
    model = Model()
    for _ in range(5):
        libcall.call_each([model], "training_step")  # outside any user loop? no: inside this for
    main_loop_cb = [d for d in list(defined.values()) if d["function"] == "Model.training_step"]
    check(not main_loop_cb, "training_step called inside main()'s loop is no callback")
    libcall.repeat(model, "training_step", 6)  # the library's own loop, called from no user loop
    cb = [id for id, d in list(defined.items()) if d["function"] == "Model.training_step" and d["kind"] == 2]
    check(len(cb) == 1, "training_step called by the library's loop is a callback")
    check(sum(1 for p in passes if p == (cb[0], 2)) == 6 and sum(1 for p in passes if p == (cb[0], 3)) == 6,
          "6 calls and 6 returns of the callback")
    four_threads_at_once()
    StandIn.fail = True
    err, sys.stderr = sys.stderr, io.StringIO()
    try:
        serve()  # the observer fails inside a callback: the program runs on
    finally:
        said, sys.stderr = sys.stderr.getvalue(), err
    check(said.count("\n") == 1 and "observer stopped" in said, "one stderr line when the observer fails: %r" % said)
    print("ok: observer on Python %d.%d.%d" % sys.version_info[:3])


if __name__ == "__main__":
    main()
