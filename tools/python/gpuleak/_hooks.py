"""Start-up hooks of `gpuleak run` (loaded by _startup/sitecustomize.py), with no change to the
program:

GPULEAK_PY_LOOP=FILE:LINE  every pass of that line is one iteration of loop "FILE:LINE". When the
    line is a `for` or `while` head, an iteration runs from the first line of its body to the
    next time the head is reached (fetching the next item is not part of it, as with
    gpuleak.iterate), and the loop's end, a `return` or a `yield` from the frame closes it; any
    other line is one iteration while it runs.
GPULEAK_PY_LOOP=NAME       every call of the function NAME (its qualified name, `Trainer.step`, or
    its plain name) is one iteration, from its start to its return.
GPULEAK_TORCH_TRACKER=1    right after `import torch`, PyTorch's caching allocator reports every
    block (tensor) it hands out or takes back to the shim (gpuleak._torch), so leaks are per tensor
    call site with no allocator switch.
(always)                   the loop observer (gpuleak._observe): the user's loops and callbacks as
    the interpreter runs them, for the analysis to choose the iteration from (GPULEAK_PY_OBSERVE=0: off);
    and torch.cuda.empty_cache() marks the timeline with its caller's line (the cache_thrash advice).
CuPy and JAX by default  right after `import cupy`, CuPy's default pool reports every array it
    hands out or takes back (gpuleak._cupy); right after `import jax`, JAX's live arrays are
    sampled at each iteration boundary, at exit and at an out-of-memory (gpuleak._jax). Under
    plain LD_PRELOAD the shim's pending call installs the same (install_from_shim).
    GPULEAK_CUPY=segments / GPULEAK_JAX=segments leave them alone (the pool's chunks, the arena).
GPULEAK_JAX=per-buffer     XLA_PYTHON_CLIENT_ALLOCATOR=address (or platform, on a JAX before 0.10
    without it; one line and the arena kept when there is neither) before JAX starts: every buffer
    its own CUDA allocation, the live arrays still sampled for their lines.
GPULEAK_CUPY=per-array     CuPy allocates every array with cudaMalloc and frees it with cudaFree
    (cupy.cuda.set_allocator(None): no memory pool); `async`: through CuPy's stream-ordered pool
    (cudaMallocAsync per array). Set when cupy is imported, before the program allocates.

The iterations go to the shim through gpuleak's C API (gpuleak_api_iteration_begin/end, as
gpuleak.iteration does), so the report says iteration_source "api". Python 3.12 and later use
sys.monitoring (events enabled on the loop's code object only; every other code object pays one
callback, on its first start, then never again); 3.10 and 3.11 use a trace function installed for
the loop's code object only (sys.settrace and threading.settrace: every Python call pays a check of
its code object, about a microsecond, and a debugger or coverage tool cannot run at the same time).
"""

import ast
import os
import sys
import threading

import gpuleak


def _warn(message):
    sys.stderr.write("gpuleak: " + message + "\n")


def install_from_environment():
    spec = os.environ.get("GPULEAK_PY_LOOP", "")
    if spec:
        install_loop(spec)
    install_frameworks()
    if os.environ.get("GPULEAK_TORCH_TRACKER", "") == "1":
        install_torch()
    after_import("torch", watch_empty_cache)  # the line of an empty_cache() in the loop (docs/advice.md)
    from gpuleak import _retention  # who keeps the leaks alive, at exit, at an OOM, at main()'s return (issue #30)
    _retention.install_retention()
    # The loops and callbacks as they run (gpuleak._observe). sys.monitoring has two tool ids free
    # for gpuleak (3 and 4): --loop takes one first, then main()'s return watch (above); with
    # --loop the observer finds none and says so in the capture, where the loop is marked anyway.
    from gpuleak import _observe
    _observe.install_from_shim()


def install_from_shim():
    """What the shim's pending call runs under plain LD_PRELOAD, after the loop observer
    (src/core/python_observer.cpp): CuPy's and JAX's hooks, as `gpuleak run`'s start-up installs
    them, in a program already running (at its first allocation with Python frames). A framework
    imported by then is hooked at once (after_import), so only what it made before is not seen: the
    first arrays of CuPy's pool, JAX's arrays until the next boundary. Never raises."""
    try:
        install_frameworks()
    except Exception as e:
        _warn("the CuPy/JAX hooks could not start (%s: %s); the report shows their pools" % (type(e).__name__, e))


_frameworks_installed = False


def install_frameworks():
    """CuPy's and JAX's hooks from GPULEAK_CUPY and GPULEAK_JAX, once per process (the start-up hook
    of `gpuleak run`, or the shim's pending call under plain LD_PRELOAD, whichever comes first)."""
    global _frameworks_installed
    if _frameworks_installed:
        return
    _frameworks_installed = True
    cupy = os.environ.get("GPULEAK_CUPY", "")
    if cupy and cupy not in ("default", "segments"):
        install_cupy(cupy)
    elif cupy != "segments":  # the default: CuPy's pool kept, each array seen (gpuleak._cupy)
        after_import("cupy", _framework_hook("_cupy"))
    jax = os.environ.get("GPULEAK_JAX", "")
    if jax == "per-buffer":
        if "jax" in sys.modules:  # plain LD_PRELOAD: JAX started before the shim's call came
            _warn("--jax per-buffer: JAX was imported before gpuleak's hook ran; it keeps its allocator")
        else:
            from gpuleak import _jax  # the standard library only
            _jax.install_per_buffer()  # or one line, and the arena kept
    # The live arrays sampled at each boundary: in the arena, what is seen of the arrays; under a
    # per-buffer allocator (the user's XLA_PYTHON_CLIENT_ALLOCATOR, or --jax per-buffer), the
    # line of each buffer that XLA made on a thread of its own (gpuleak._jax.attach).
    if jax != "segments":
        after_import("jax", _framework_hook("_jax"))


# --- the loop ------------------------------------------------------------------------------------

def parse_loop(spec):
    """("file", path, line) for FILE:LINE, ("function", name, 0) otherwise; ValueError when bad."""
    path, sep, line = spec.rpartition(":")
    if sep and line.isdigit():
        if not path or int(line) < 1:
            raise ValueError("--loop %s: expected FILE:LINE with LINE >= 1" % spec)
        return ("file", path, int(line))
    if spec and all(part.isidentifier() or part == "<locals>" for part in spec.split(".")):
        return ("function", spec, 0)
    raise ValueError("--loop %s: expected FILE:LINE or a function name" % spec)


def loop_body(path, line):
    """The last line of the `for`/`while` whose head is `line` in `path`; None when it is no loop head."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and node.lineno == line:
            return getattr(node, "end_lineno", None)
    return None


class _Passes:
    """The iteration state of one loop: begin/end go to the shim; a begin closes an open one."""

    def __init__(self, label):
        self.label = label
        self.open = False
        self.count = 0  # iterations begun

    def begin(self):
        gpuleak._begin(self.label)
        self.open = True
        self.count += 1

    def end(self):
        if self.open:
            gpuleak._end()
            self.open = False


class LineLoop:
    """FILE:LINE: which code objects hold the line, and what each line event of them means."""

    def __init__(self, path, line):
        self.path = path
        self.line = line
        self.want = os.path.realpath(path) if os.path.exists(path) else None
        end = loop_body(path, line) if self.want else None
        self.body_end = end if end and end > line else None  # None: a plain line
        self.passes = _Passes("%s:%d" % (os.path.basename(path), line))
        self.armed = False  # the head ran: the next body line begins an iteration
        self._files = {}

    def _same_file(self, filename):
        hit = self._files.get(filename)
        if hit is None:
            if self.want is not None:
                hit = os.path.realpath(filename) == self.want
            else:
                hit = filename == self.path or filename.endswith("/" + self.path)
            self._files[filename] = hit
        return hit

    def matches(self, code):
        try:
            if not self._same_file(code.co_filename) or code.co_firstlineno > self.line:
                return False
            return any(l == self.line for _, _, l in code.co_lines())
        except Exception:  # an odd code object: not the loop (never an error in the program)
            return False

    def on_line(self, line):
        if self.body_end is None:  # a plain line: one iteration while it runs
            if line == self.line:
                self.passes.end()
                self.passes.begin()
            else:
                self.passes.end()
            return
        if line == self.line:
            self.passes.end()
            self.armed = True
        elif self.line < line <= self.body_end:
            if self.armed:
                self.armed = False
                self.passes.begin()
        else:
            self.armed = False
            self.passes.end()

    def on_leave(self):
        self.armed = False
        self.passes.end()


class FunctionLoop:
    """NAME: every call of a function of that qualified (or plain) name is one iteration."""

    def __init__(self, name):
        self.name = name
        self.passes = _Passes(name)

    def matches(self, code):
        qualname = getattr(code, "co_qualname", code.co_name)
        return qualname == self.name or code.co_name == self.name

    def on_start(self):
        self.passes.begin()

    def on_leave(self):
        self.passes.end()


def install_loop(spec):
    if sys.version_info < (3, 10):
        _warn("--loop needs Python 3.10 or later (this is %d.%d); no loop marked" % sys.version_info[:2])
        return None
    try:
        kind, what, line = parse_loop(spec)
    except ValueError as e:
        _warn(str(e) + "; no loop marked")
        return None
    loop = LineLoop(what, line) if kind == "file" else FunctionLoop(what)
    if hasattr(sys, "monitoring"):
        _install_monitoring(loop)
    else:
        _install_trace(loop)
    import atexit
    atexit.register(said_if_never_ran, loop, spec)
    return loop


def said_if_never_ran(loop, spec):
    """At exit: a --loop that never began an iteration (a misspelt function, a line never
    reached) says so in one line, instead of a report that silently found no iterations."""
    if loop.passes.count:
        return
    if isinstance(loop, FunctionLoop):
        _warn("--loop %s: no function of that name ran; no iteration was marked (a qualified name "
              "such as Trainer.step, or FILE:LINE of the loop)" % spec)
    else:
        _warn("--loop %s: no iteration began at that line (never reached, or a loop that made no pass); "
              "no iteration was marked" % spec)


def _install_trace(loop):
    """3.10/3.11: a global trace function that hands out a local one for the loop's code only."""
    verdicts = {}
    lines = isinstance(loop, LineLoop)

    def local(frame, event, arg):
        if event == "line" and lines:
            loop.on_line(frame.f_lineno)
        elif event == "return":
            loop.on_leave()
        return local

    def global_trace(frame, event, arg):
        if event != "call":
            return None
        code = frame.f_code
        hit = verdicts.get(code)
        if hit is None:
            hit = verdicts[code] = loop.matches(code)
        if not hit:
            return None
        if not lines:
            loop.on_start()
        return local

    sys.settrace(global_trace)
    threading.settrace(global_trace)


def _install_monitoring(loop):
    """3.12+: PY_START everywhere until each code object has been seen once (DISABLE), then LINE
    and PY_RETURN/PY_YIELD on the loop's code objects only."""
    mon = sys.monitoring
    tool = None
    for candidate in (4, 3):  # free ids (0 debugger, 1 coverage, 2 profiler, 5 optimizer)
        if mon.get_tool(candidate) is None:
            tool = candidate
            break
    if tool is None:
        _warn("--loop: no free sys.monitoring tool id; no loop marked")
        return
    mon.use_tool_id(tool, "gpuleak")
    E = mon.events
    lines = isinstance(loop, LineLoop)
    hooked = set()

    def on_start(code, offset):
        if code in hooked:  # a later call: a function loop's next iteration
            if not lines:
                loop.on_start()
            return None
        if not loop.matches(code):
            return mon.DISABLE
        hooked.add(code)
        local = (E.LINE if lines else E.PY_START) | E.PY_RETURN | E.PY_YIELD
        mon.set_local_events(tool, code, local)
        if not lines:
            loop.on_start()
        return None

    def on_line(code, line):
        if code in hooked:
            loop.on_line(line)

    def on_leave(code, offset, value):
        if code in hooked:
            loop.on_leave()

    mon.register_callback(tool, E.PY_START, on_start)
    mon.register_callback(tool, E.LINE, on_line)
    mon.register_callback(tool, E.PY_RETURN, on_leave)
    mon.register_callback(tool, E.PY_YIELD, on_leave)
    mon.set_events(tool, E.PY_START)


# --- CuPy ----------------------------------------------------------------------------------------

def _configure_cupy(module, mode):
    try:
        cuda = module.cuda
        if mode == "per-array":
            cuda.set_allocator(None)
        elif mode == "async":
            cuda.set_allocator(cuda.MemoryAsyncPool().malloc)
    except Exception as e:
        _warn("--cupy %s: could not set CuPy's allocator (%s: %s); CuPy keeps its pool" % (mode, type(e).__name__, e))


class _AfterImport:
    """A meta path finder that lets the real one find the package `name`, then calls `then(module)`
    right after the package has run (before the program can use it), and steps aside."""

    def __init__(self, name, then):
        self.name = name
        self.thens = [then]

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        from importlib.machinery import PathFinder
        spec = PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module
        thens = self.thens

        def exec_module(module):
            run(module)
            for then in thens:
                try:
                    then(module)
                except Exception as e:  # a hook never fails the program's import
                    _warn("start-up hook for %s failed (%s: %s); running without it" % (name, type(e).__name__, e))

        spec.loader.exec_module = exec_module
        return spec


def after_import(name, then):
    """then(module) once `name` is imported: now when it is already (a .pth file imported it)."""
    if name in sys.modules:
        then(sys.modules[name])
        return
    for finder in sys.meta_path:  # several hooks for one package: one finder calls them in order
        if isinstance(finder, _AfterImport) and finder.name == name:
            finder.thens.append(then)
            return
    sys.meta_path.insert(0, _AfterImport(name, then))


def install_cupy(mode):
    if mode not in ("per-array", "async"):
        _warn("--cupy %s: unknown mode; CuPy keeps its pool" % mode)
        return
    after_import("cupy", lambda module: _configure_cupy(module, mode))


def _framework_hook(name):
    """then(module) for after_import: gpuleak.<name>.attach(module), a failure said in one line."""
    def then(module):
        import importlib
        try:
            importlib.import_module("gpuleak." + name).attach(module)
        except Exception as e:  # never the program's problem
            _warn("%s: objects not seen (%s: %s); the report shows the pool" % (module.__name__, type(e).__name__, e))
    return then


# --- PyTorch -------------------------------------------------------------------------------------

def _attach_torch(module):
    from gpuleak import _torch  # the standard library only: imported when torch is, not at start-up
    try:
        _torch.attach(module)
    except Exception as e:  # never the program's problem
        _torch.not_seen("%s: %s" % (type(e).__name__, e))


# The mark's label: src/analysis/advice.h kEmptyCacheMark, then "FILE:LINE" of the caller.
EMPTY_CACHE_MARK = "torch.cuda.empty_cache() at "


def watch_empty_cache(torch):
    """torch.cuda.empty_cache marks gpuleak's timeline with its caller's line before it runs: the
    frees of the segments it returns carry no stack, and the cache_thrash advice names this line
    (docs/advice.md). The function is otherwise the same: arguments, result and exceptions."""
    cuda = getattr(torch, "cuda", None)
    original = getattr(cuda, "empty_cache", None)
    if original is None or getattr(original, "_gpuleak_watched", False):
        return
    import functools

    @functools.wraps(original)
    def empty_cache(*args, **kwargs):
        try:
            caller = sys._getframe(1)
            gpuleak.mark("%s%s:%d" % (EMPTY_CACHE_MARK, caller.f_code.co_filename, caller.f_lineno))
        except Exception:  # never the program's problem
            pass
        return original(*args, **kwargs)

    empty_cache._gpuleak_watched = True
    cuda.empty_cache = empty_cache
    memory = getattr(cuda, "memory", None)  # torch.cuda.memory.empty_cache is the same function
    if getattr(memory, "empty_cache", None) is original:
        memory.empty_cache = empty_cache


def install_torch():
    """GPULEAK_TORCH_TRACKER=1 (gpuleak run's default): tensors through the caching allocator's trace."""
    after_import("torch", _attach_torch)
