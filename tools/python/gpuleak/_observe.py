"""The Python loop observer: the passes of the user's own loops and the calls of the user's
callbacks, as the interpreter runs them, sent to the shim for the capture (format 1.5: LoopRecord,
LoopPassRecord, ObserverRecord; docs/capture-format.md). The analysis chooses among these levels
the one that explains the memory (src/analysis/observed_loops.cpp); docs/python.md "Iterations"
is the user's guide.

Python 3.12+ (sys.monitoring, one tool id of our own):
  - PY_START, global: each code object pays one callback on its first start. A code object that is
    not the user's (the standard library, site-packages, a framework's package, gpuleak's own) gets
    DISABLE and is never seen again. A user's code object gets the local JUMP event.
  - JUMP, local to the user's code: a jump to an earlier offset (JUMP_BACKWARD; `continue` too) is
    the end of one pass of the loop whose head is the jump's target. The loop is defined on its
    first back edge: file, qualified name, the head's line and the body's last line (from the
    source's `for`/`while` node, else from the bytecode), and the loop it runs in (the enclosing
    loop of the same code object, else the loop an outer user frame is in). Forward jumps and the
    `await` machinery's own back edges (JUMP_BACKWARD_NO_INTERRUPT) get DISABLE.
  - A user function whose caller is library code (Lightning calling training_step, the event loop
    running a coroutine) is a callback: its start is a pass start; PY_RETURN (local, on that code
    only) its end. A function called from user code only, QUIET times, gets DISABLE; so does one
    that the library calls from inside a user's loop or callback (a model's forward under the step
    loop): it is part of that level's pass.
  - Each pass call returns the shim's allocation clock: a loop (or callback) whose passes see
    nothing allocated QUIET times in a row, each shorter than FAST_NS, gets DISABLE at each of its
    locations, so a pure-Python hot loop costs a handful of callbacks, then nothing; a slow loop
    that allocates only now and then (a caching allocator's) keeps its passes, at little cost.
  - Code already running when the observer starts (the main script's module code when the shim
    starts it at the first allocation) is found on every thread's stack and watched from there on.
Python 3.10/3.11 have no sys.monitoring: nothing is observed (tracing every line would cost the
program too much); the capture says so, and the analysis infers the loop from the allocations'
lines.

Nothing here may fail the program: a failure is one line on stderr and the observer stops.
"""

import ctypes
import os
import sys
import threading
import time

import gpuleak as _package  # its iteration-boundary samplers (at_boundary)

QUIET = 8  # passes (or calls) in a row with nothing allocated before a location is let go ...
FAST_NS = 20_000  # ... when they came faster than this each: a slow quiet loop costs little, and its
                  # passes still mark iterations (a caching allocator that allocates only now and then)

_installed = None
_lock = threading.Lock()


def _warn(message):
    try:
        sys.stderr.write("gpuleak: " + message + "\n")
    except Exception:
        pass


# --- whose code ---------------------------------------------------------------------------------

_FRAMEWORK_DIRS = ("/torch/", "/jax/", "/jaxlib/", "/jax_plugins/", "/cupy/", "/cupy_backends/", "/triton/")
_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _stdlib(path):
    """src/text/code_owner.h is_stdlib_file, in Python."""
    if path.startswith("<frozen "):
        return True
    for marker in ("/lib/python", "/lib64/python", "/lib/pypy"):
        at = path.find(marker)
        if at >= 0 and path.find("/", at + len(marker)) >= 0:
            return True
    zip_at = path.find(".zip/")
    return zip_at >= 0 and path.rfind("/python", 0, zip_at) >= 0


def _roots():
    return [r.rstrip("/") for r in os.environ.get("GPULEAK_USER_CODE", "").split(":") if r]


class UserCode:
    """The analysis's line between the user's Python files and the rest (src/analysis/user_code.h,
    with its GPULEAK_USER_CODE roots first; `gpuleak run --user-code` sets the variable too), plus
    gpuleak's own package."""

    def __init__(self, roots=None):
        self.roots = _roots() if roots is None else roots
        self._files = {}

    def file(self, path):
        hit = self._files.get(path)
        if hit is None:
            hit = self._files[path] = self._decide(path)
        return hit

    def _decide(self, path):
        if not path or path.startswith("<"):
            return False
        if any(path == r or path.startswith(r + "/") for r in self.roots):
            return True
        full = os.path.abspath(path)
        if full.startswith(_OWN_DIR):
            return False
        if "/site-packages/" in full or "/dist-packages/" in full:
            return False
        if any(d in full for d in _FRAMEWORK_DIRS):
            return False
        return not _stdlib(full)


# --- the shim -----------------------------------------------------------------------------------

class Shim:
    """gpuleak_api_loop_define / loop_pass / observer (src/shim/c_api.cpp), or None when absent."""

    def __init__(self):
        try:
            process = ctypes.CDLL(None)
            self.define = process.gpuleak_api_loop_define
            passed = process.gpuleak_api_loop_pass
            self.observer = process.gpuleak_api_observer
        except (OSError, AttributeError):
            self.define = self.passed = self.observer = None
            return
        self.define.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p,
                                ctypes.c_uint, ctypes.c_uint, ctypes.c_uint]
        self.define.restype = None
        self.observer.argtypes = [ctypes.c_int, ctypes.c_char_p]
        self.observer.restype = None
        # A pass is the observer's per-iteration call: passed(id, op, task_high, task_low) takes C
        # ints only, passed with no argtypes (no converter object per argument; src/shim/c_api.cpp),
        # the task's id as two halves. An older shim has only the 64-bit form.
        self.passed = getattr(process, "gpuleak_api_loop_pass32", None)
        if self.passed is not None:
            self.passed.restype = ctypes.c_ulonglong
            return
        passed.argtypes = [ctypes.c_uint, ctypes.c_int, ctypes.c_ulonglong]
        passed.restype = ctypes.c_ulonglong

        def passed64(id, op, task_high, task_low):
            return passed(id, op, task_high << 32 | task_low)

        self.passed = passed64

    def present(self):
        return self.passed is not None


def _text(s):
    return str(s).encode("utf-8", "backslashreplace").split(b"\0", 1)[0]


def _task_id():
    """id() of the running asyncio task, 0 when none (asyncio not imported, no running loop)."""
    aio = sys.modules.get("asyncio")
    if aio is None:
        return 0
    try:
        loop = aio._get_running_loop()
        if loop is None:
            return 0
        task = aio.current_task(loop)
        return id(task) if task is not None else 0
    except Exception:
        return 0


# --- loops in a code object ---------------------------------------------------------------------

class Loop:
    __slots__ = ("id", "clock", "quiet", "since", "off", "code", "head", "end", "first", "last", "parent", "depth")

    def __init__(self, code, head, end):
        self.id = 0  # defined (sent to the shim) on its first pass
        self.clock = None
        self.quiet = 0
        self.since = 0  # when the quiet streak began (perf_counter_ns)
        self.off = False
        self.code = code
        self.head = head  # offset of the jump's target
        self.end = end    # offset of the (last) jump back
        self.first = self.last = 0
        self.parent = None
        self.depth = 0


_sources = {}  # file -> (statements, spans) as _parse_loops returns them, or None


def _parse_loops(path):
    """(statements, spans) of a source file, each a list of (lineno, end_lineno): its for/while
    statements, and those with its comprehensions (inlined loops since 3.12), the lines a loop's
    backward jump can come from. None without the source (not Python: the bytecode's lines)."""
    if path in _sources:
        return _sources[path]
    parsed = None
    try:
        import ast
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
        statements, spans = [], []
        for n in ast.walk(tree):
            if not getattr(n, "end_lineno", None):
                continue
            if isinstance(n, (ast.For, ast.AsyncFor, ast.While)):
                statements.append((n.lineno, n.end_lineno))
                spans.append((n.lineno, n.end_lineno))
            elif isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                spans.append((n.lineno, n.end_lineno))
        parsed = (statements, spans)
    except Exception:
        parsed = None
    _sources[path] = parsed
    return parsed


def _loop_nodes(path):
    parsed = _parse_loops(path)
    return parsed[0] if parsed else None


def _loop_spans(path):
    parsed = _parse_loops(path)
    return parsed[1] if parsed else None


def _lines(code, lo, hi):
    """Lowest and highest line of the instructions at offsets [lo, hi]."""
    first = last = 0
    for start, end, line in code.co_lines():
        if line is None or end <= lo or start > hi:
            continue
        first = line if not first else min(first, line)
        last = max(last, line)
    return first, last


class CodeInfo:
    """The loops of one user code object, found from its backward jumps (once, on first sight)."""

    __slots__ = ("loops", "by_head", "calls", "callback", "not_loops")

    def __init__(self, code, dis):
        self.loops = []
        self.by_head = {}
        self.calls = 0         # starts seen from user code (not callbacks)
        self.callback = None   # Loop-like record of the function as a callback, once one is seen
        self.not_loops = set()  # offsets of backward jumps that close no loop (below)
        backward = (dis.opmap.get("JUMP_BACKWARD"),)
        try:
            spans = _loop_spans(code.co_filename)
            for ins in dis.get_instructions(code):
                if ins.opcode in backward and isinstance(ins.argval, int) and ins.argval < ins.offset:
                    # The compiler (3.12+) also jumps back from an exception handler, placed after
                    # the function's code, to the code after its try statement: a jump from a line
                    # in no loop statement closes no loop, and must not be taken for one around
                    # the function's real loops (which would then all look nested).
                    line = ins.positions.lineno if ins.positions else None
                    if spans is not None and line is not None and not any(lo <= line <= hi for lo, hi in spans):
                        self.not_loops.add(ins.offset)
                        continue
                    loop = self.by_head.get(ins.argval)
                    if loop is None:
                        loop = self.by_head[ins.argval] = Loop(code, ins.argval, ins.offset)
                        self.loops.append(loop)
                    loop.end = max(loop.end, ins.offset)
        except Exception:
            pass
        # Static nesting: the innermost other loop whose range holds this one's.
        for loop in self.loops:
            best = None
            for other in self.loops:
                if other is not loop and other.head <= loop.head and loop.end <= other.end:
                    if best is None or other.end - other.head < best.end - best.head:
                        best = other
            loop.parent = best

    def loop_at(self, offset):
        """The innermost loop whose range holds `offset`."""
        best = None
        for loop in self.loops:
            if loop.head <= offset <= loop.end and (best is None or loop.end - loop.head < best.end - best.head):
                best = loop
        return best


def _quiet(level, clock):
    """True when `level` (a Loop) has had QUIET passes in a row with the allocation clock unchanged,
    each faster than FAST_NS: time to let it go."""
    if clock != level.clock:
        level.clock = clock
        level.quiet = 0
        return False
    if level.quiet == 0:
        level.since = time.perf_counter_ns()
    level.quiet += 1
    if level.quiet < QUIET:
        return False
    if time.perf_counter_ns() - level.since < QUIET * FAST_NS:
        return True
    level.quiet = 0  # slow: a quiet step of a real loop; look again over the next streak
    return False


# --- the observer (3.12+) -----------------------------------------------------------------------

class Observer:
    def __init__(self, shim, user):
        import dis
        self.shim = shim
        self.user = user
        self.dis = dis
        self.mon = sys.monitoring
        self.codes = {}  # code -> CodeInfo (user code only; the rest is DISABLEd)
        self.next_id = 1
        self.tool = None
        self.no_interrupt = dis.opmap.get("JUMP_BACKWARD_NO_INTERRUPT", -1)
        # Definitions are made once, under this lock: the shim's calls release the GIL, and a
        # handler starting on four worker threads at once would otherwise be defined four times,
        # its first calls' passes split between the copies (issue #33). Taken only to learn a code
        # object and to define.
        self.defining = threading.RLock()
        try:  # a fork while another thread defines must not leave the child's lock held for ever
            os.register_at_fork(after_in_child=self._new_lock)
        except Exception:
            pass

    def _new_lock(self):
        self.defining = threading.RLock()

    # Each definition goes to the shim once, parents first.
    def _define(self, loop, frame):
        if loop.id:
            return loop.id
        with self.defining:
            return loop.id or self._define_locked(loop, frame)

    def _define_locked(self, loop, frame):
        code = loop.code
        loop.first, loop.last = _lines(code, loop.head, loop.end)
        nodes = _loop_nodes(code.co_filename)
        if nodes and loop.first:
            inner = None
            for lo, hi in nodes:  # the innermost for/while around the body's lines
                if lo <= loop.first and loop.last <= hi and (inner is None or hi - lo < inner[1] - inner[0]):
                    inner = (lo, hi)
            if inner:
                loop.first, loop.last = inner
        parent = loop.parent
        parent_id = 0
        if parent is not None:
            parent_id = self._define(parent, frame)
        else:
            parent_id, parent = self._outer_loop(frame)
        loop.depth = parent.depth + 1 if parent is not None else 0
        loop.id = self.next_id
        self.next_id += 1
        self.shim.define(loop.id, parent_id, 1, _text(code.co_filename), _text(getattr(code, "co_qualname", code.co_name)),
                         loop.first, loop.last, loop.depth)
        return loop.id

    def _outer_loop(self, frame, define=True):
        """(id, loop) of the loop (or callback) an outer user frame is running, (0, None) when none;
        define=False only looks (the id is then 0)."""
        f = frame.f_back if frame is not None else None
        while f is not None:
            info = self.codes.get(f.f_code)
            if info is not None:
                loop = info.loop_at(f.f_lasti)
                if loop is not None:
                    return (self._define(loop, f) if define else 0), loop
                if info.callback is not None:
                    return info.callback.id, info.callback
            f = f.f_back
        return 0, None

    def _define_callback(self, code, info, frame):
        with self.defining:
            if info.callback is None:  # another thread may have defined it while this one waited
                self._define_callback_locked(code, info, frame)

    def _define_callback_locked(self, code, info, frame):
        cb = Loop(code, 0, 0)
        first, last = _lines(code, 0, 1 << 30)
        cb.first, cb.last = code.co_firstlineno, max(last, code.co_firstlineno)
        parent_id, parent = self._outer_loop(frame)
        cb.depth = parent.depth + 1 if parent is not None else 0
        cb.id = self.next_id
        self.next_id += 1
        self.shim.define(cb.id, parent_id, 2, _text(code.co_filename), _text(getattr(code, "co_qualname", code.co_name)),
                         cb.first, cb.last, cb.depth)
        info.callback = cb
        E = self.mon.events
        try:  # its returns, from now on (the one local event a callback adds)
            self.mon.set_local_events(self.tool, code, E.JUMP | E.PY_RETURN)
        except Exception:
            pass

    def learn(self, code):
        if not self.user.file(code.co_filename):
            return None
        # Once per code object: four worker threads meeting a handler at once must share one
        # CodeInfo, or each defines its own callback and its calls' passes are split between the
        # copies (and a late learner's JUMP-only events drop the first one's PY_RETURN).
        with self.defining:
            info = self.codes.get(code)
            if info is None:
                info = CodeInfo(code, self.dis)
                try:
                    self.mon.set_local_events(self.tool, code, self.mon.events.JUMP)
                except Exception:
                    pass
                self.codes[code] = info
        return info

    # -- callbacks --

    def _start(self, code, frame):
        info = self.codes.get(code)
        if info is None:
            info = self.learn(code)
            if info is None:
                return self.mon.DISABLE
        if code.co_name == "<module>":
            return self.mon.DISABLE  # module code runs once: its loops are seen by JUMP alone
        caller = frame.f_back
        if caller is None or self.user.file(caller.f_code.co_filename):
            info.calls += 1
            if info.callback is None and info.calls >= QUIET:
                return self.mon.DISABLE  # called from the user's own code only: no callback
            return None
        if info.callback is None:
            # A function the library calls from inside the user's own loop or callback (a model's
            # forward under the step loop, or under training_step) is part of that level's pass,
            # not a level of its own: after QUIET such calls it is let go, and only a function the
            # library calls from outside any user level (training_step under Trainer.fit) remains.
            if self._outer_loop(frame, define=False)[1] is not None:
                info.calls += 1
                return self.mon.DISABLE if info.calls >= QUIET else None
            self._define_callback(code, info, frame)
        cb = info.callback
        if cb.off:
            return self.mon.DISABLE
        task = _task_id()
        clock = self.shim.passed(cb.id, 2, task >> 32, task & 0xFFFFFFFF)
        # A coroutine per request starts in bursts (the requests queued behind a semaphore start
        # before any allocates): its quiet streak is judged at its returns instead (issue #33).
        if not task and _quiet(cb, clock):
            cb.off = True
        return None

    def _return(self, code, frame):
        info = self.codes.get(code)
        if info is None or info.callback is None:
            return None
        cb = info.callback
        if cb.off:
            return self.mon.DISABLE
        caller = frame.f_back
        if caller is not None and not self.user.file(caller.f_code.co_filename):
            task = _task_id()
            clock = self.shim.passed(cb.id, 3, task >> 32, task & 0xFFFFFFFF)
            if task and _quiet(cb, clock):
                cb.off = True
        return None

    def _jump(self, code, src, dst, frame):
        if dst >= src:
            return self.mon.DISABLE
        info = self.codes.get(code)
        if info is None:
            info = self.learn(code)
            if info is None:
                return self.mon.DISABLE
        loop = info.by_head.get(dst)
        if loop is None or src != loop.end:  # a jump not seen yet (each pass jumps from the same place)
            if src in info.not_loops:
                return self.mon.DISABLE  # an exception handler's way back (CodeInfo)
            if code.co_code[src] == self.no_interrupt:
                return self.mon.DISABLE  # the await / yield-from machinery, not the user's loop
            if loop is None:
                with self.defining:  # one Loop per head, whichever thread jumps there first
                    loop = info.by_head.get(dst)
                    if loop is None:
                        loop = Loop(code, dst, src)
                        loop.parent = info.loop_at(dst)
                        info.loops.append(loop)
                        info.by_head[dst] = loop
        if loop.off:
            return self.mon.DISABLE
        if not loop.id:
            self._define(loop, frame)
        if _package._boundary_observers:  # JAX's live arrays sampled at each pass (gpuleak._jax)
            _package.at_boundary("end", loop.depth > 0)
        task = _task_id()
        if _quiet(loop, self.shim.passed(loop.id, 1, task >> 32, task & 0xFFFFFFFF)):
            loop.off = True
            return self.mon.DISABLE
        return None

    # The callbacks sys.monitoring calls. An exception in one would surface in the program:
    # instead the observer stops, with one line on stderr, and the program runs on unobserved.
    # sys._getframe(1) here is the monitored frame.
    def on_start(self, code, offset):
        try:
            return self._start(code, sys._getframe(1))
        except Exception as e:
            return self._failed(e)

    def on_return(self, code, offset, value):
        try:
            return self._return(code, sys._getframe(1))
        except Exception as e:
            return self._failed(e)

    def on_jump(self, code, src, dst):
        try:
            return self._jump(code, src, dst, sys._getframe(1))
        except Exception as e:
            return self._failed(e)

    def _failed(self, e):
        self.stop("%s: %s" % (type(e).__name__, e))
        return self.mon.DISABLE

    def stop(self, why):
        try:
            self.mon.set_events(self.tool, 0)
            for code in list(self.codes):
                self.mon.set_local_events(self.tool, code, 0)
            self.shim.observer(2, _text("the observer stopped (%s)" % why))
        except Exception:
            pass
        _warn("the Python loop observer stopped (%s); iterations are inferred from here on" % why)

    def start(self):
        mon = self.mon
        for candidate in (3, 4):  # free ids (0 debugger, 1 coverage, 2 profiler, 5 optimizer; --loop takes one)
            if mon.get_tool(candidate) is None:
                self.tool = candidate
                break
        if self.tool is None:
            return "no free sys.monitoring tool id (3 and 4 are taken)"
        mon.use_tool_id(self.tool, "gpuleak-loops")
        E = mon.events
        mon.register_callback(self.tool, E.PY_START, self.on_start)
        mon.register_callback(self.tool, E.PY_RETURN, self.on_return)
        mon.register_callback(self.tool, E.JUMP, self.on_jump)
        mon.set_events(self.tool, E.PY_START)
        # Code already running (the main script's module, a function already in its loop).
        try:
            for frame in sys._current_frames().values():
                f = frame
                while f is not None:
                    if f.f_code not in self.codes:
                        self.learn(f.f_code)
                    f = f.f_back
        except Exception:
            pass
        return None


def install(shim=None):
    """Starts the observer once per process; returns the Observer, or None (said in the capture)."""
    global _installed
    with _lock:
        if _installed is not None:
            return _installed or None
        _installed = False
        shim = shim or Shim()
        if not shim.present():
            return None
        version = "Python %d.%d.%d" % sys.version_info[:3]
        if os.environ.get("GPULEAK_PY_OBSERVE", "1") == "0":
            shim.observer(2, _text(version + ": observation off (GPULEAK_PY_OBSERVE=0)"))
            return None
        if not hasattr(sys, "monitoring"):
            shim.observer(2, _text(version + ": no sys.monitoring (3.12+); the loop is inferred from the allocations' lines"))
            return None
        observer = Observer(shim, UserCode())
        why = observer.start()
        if why:
            shim.observer(2, _text(version + ": " + why))
            return None
        shim.observer(1, _text(version + ": sys.monitoring tool %d" % observer.tool))
        _installed = observer
        return observer


def install_from_shim():
    """What the shim's pending call runs (src/core/python_observer.cpp): never raises."""
    try:
        install()
    except Exception as e:
        _warn("the Python loop observer could not start (%s: %s); iterations are inferred" % (type(e).__name__, e))
