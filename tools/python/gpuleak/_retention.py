"""Who keeps it alive (issue #30): the Python reference path from a root the user can name to every
live object that owns GPU memory, sent to the shim at exit and at an out-of-memory.

install_retention() (called by _hooks.install_from_environment, and by any bootstrap that runs the
same hooks) registers an atexit handler and watches the frameworks' out-of-memory exceptions. Each
walk is one forward breadth-first search from the roots over gc.get_referents with parent links,
so the first time an object is reached is by a shortest path:
  roots      the locals of every thread's live frames (outermost first), the frames of an uncaught
             exception's traceback (sys.last_traceback), then every module's globals (__main__
             first); a module reached through a global is not entered again (its globals are roots)
  targets    PyTorch tensors and storages on CUDA (untyped_storage().data_ptr(), nbytes()), CuPy
             arrays (data.ptr, nbytes), JAX arrays (unsafe_buffer_pointer(), nbytes); a framework
             is only looked at when the program imported it (sys.modules)
  autograd   a tensor's grad_fn, .grad, its nodes' next_functions and saved tensors (_saved_*) are
             followed explicitly: get_referents does not see PyTorch's C++ graph
Bounds: GPULEAK_RETENTION_BUDGET seconds (default 2), a depth limit and a node limit; a walk that
hits one sends what it found with the reason it stopped. Nothing runs while the loop runs. The walk
never raises into the program, disables the garbage collector while it runs (no finalizer runs in
the middle), and drops every reference it took when it returns.

Each path goes to the shim as gpuleak_api_retention(event, address, bytes, text) (event 1 at exit,
2 at an out-of-memory, 3 when the main script's main() returned), then one summary call with address 0 (bytes: the walk's duration in ns;
text: "objects=N paths=M stopped=REASON"). The analysis joins the paths to the leaks by address.
"""

import atexit
import ctypes
import gc
import os
import sys
import time
import types

EXIT, OOM, RETURN = 1, 2, 3
DEFAULT_BUDGET = 2.0
MAX_DEPTH = 64  # hops from a root
MAX_NODES = 5_000_000  # objects visited
MAX_PATHS = 20_000  # paths sent per walk
MAX_OOM_WALKS = 2  # a program that catches OOMs and retries pays for the first ones only
MAX_TEXT = 4000
_ATOMIC = frozenset([int, float, complex, str, bytes, bool, type(None), type(Ellipsis)])


def _warn(message):
    sys.stderr.write("gpuleak: " + message + "\n")


def parse_budget(text):
    """Seconds > 0 from GPULEAK_RETENTION_BUDGET ("" is the default); ValueError when bad."""
    if text == "":
        return DEFAULT_BUDGET
    value = float(text)  # ValueError for words
    if not (value > 0 and value < 1e6):  # also refuses nan and inf
        raise ValueError(text)
    return value


def install_retention(environ=None):
    """Registers the exit walk and the out-of-memory watch; returns the Retention, or None when
    GPULEAK_RETENTION=0 or the budget is bad (said in one line)."""
    environ = os.environ if environ is None else environ
    if environ.get("GPULEAK_RETENTION", "1") == "0":
        return None
    try:
        budget = parse_budget(environ.get("GPULEAK_RETENTION_BUDGET", ""))
    except ValueError:
        _warn("GPULEAK_RETENTION_BUDGET=%s is no number of seconds > 0; retention paths off"
              % environ.get("GPULEAK_RETENTION_BUDGET"))
        return None
    r = Retention(budget)
    # Registered at start-up, so it runs after every atexit handler the program registers later
    # (atexit runs them last-in first-out): what the program's own exit work frees has gone.
    atexit.register(r.at_exit)
    if hasattr(sys, "monitoring"):
        r.watch_main_return()
    from gpuleak import _hooks
    for package, find in _OOM_CLASSES:
        _hooks.after_import(package, lambda module, find=find: r.watch(find(module)))
    return r


# --- the frameworks ------------------------------------------------------------------------------

def _torch_oom(module):
    cls = getattr(getattr(module, "cuda", None), "OutOfMemoryError", None) or getattr(module, "OutOfMemoryError", None)
    return cls, None


def _cupy_oom(module):
    memory = getattr(getattr(module, "cuda", None), "memory", None)
    return getattr(memory, "OutOfMemoryError", None), None


def _jax_oom(module):
    errors = getattr(module, "errors", None)
    cls = getattr(errors, "JaxRuntimeError", None)
    if cls is None:
        xla = sys.modules.get("jaxlib.xla_extension")
        cls = getattr(xla, "XlaRuntimeError", None)
    return cls, lambda exc: "RESOURCE_EXHAUSTED" in str(exc.args[0] if exc.args else "")


_OOM_CLASSES = [("torch", _torch_oom), ("cupy", _cupy_oom), ("jax", _jax_oom)]


def _torch_memory(t):
    if not t.is_cuda:
        return None
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


def _storage_memory(s):
    return (s.data_ptr(), s.nbytes()) if s.is_cuda else None


def _cupy_memory(a):
    return a.data.ptr, a.nbytes


def _jax_memory(a):
    return a.unsafe_buffer_pointer(), a.nbytes


def _handlers():
    """(class, memory function, "tensor" when its autograd graph is followed), for the imported
    frameworks only."""
    out = []
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(getattr(torch, "Tensor", None), type):
            out.append((torch.Tensor, _torch_memory, True))
        if isinstance(getattr(torch, "UntypedStorage", None), type):
            out.append((torch.UntypedStorage, _storage_memory, False))
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(getattr(cupy, "ndarray", None), type):
        out.append((cupy.ndarray, _cupy_memory, False))
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(getattr(jax, "Array", None), type):
        out.append((jax.Array, _jax_memory, False))
    return out


# --- the walk ------------------------------------------------------------------------------------

class Retention:
    def __init__(self, budget):
        self.budget = budget
        self.oom_walks = 0
        self.busy = False
        self.api = None
        self.last = None  # the last walk's (objects, paths, stopped, seconds), for tests

    def at_exit(self):
        self.run(EXIT)

    def watch(self, found):
        """Wraps the __init__ of a framework's out-of-memory exception: the framework creates the
        exception where it fails (PyTorch and JAX from C++, CuPy in Python), in the program's thread,
        with the failing call's frames live; nothing else pays anything."""
        cls, check = found
        if not isinstance(cls, type) or getattr(cls, "_gpuleak_retention", False):
            return
        original = cls.__dict__.get("__init__")
        owner = self

        def __init__(exc, *args, **kwargs):
            if original is not None:
                original(exc, *args, **kwargs)
            else:
                super(cls, exc).__init__(*args, **kwargs)
            try:
                if check is None or check(exc):
                    owner.at_oom()
            except Exception:  # never the program's problem
                pass

        try:
            cls.__init__ = __init__
            cls._gpuleak_retention = True
        except (TypeError, AttributeError) as e:
            _warn("cannot watch %s for out-of-memory paths (%s)" % (cls.__name__, e))

    def watch_main_return(self):
        """3.12+: one more walk when a function the main script's body called (`main()`) returns
        after running most of the program, while its frame and locals are still live: a leak kept
        in a local of main is freed before exit. sys.monitoring: PY_START once per code object
        (DISABLE unless the caller is the main script's body), PY_START and PY_RETURN stay on for
        those functions only (main, or a step() called from a module-level loop: a callback each)."""
        mon = sys.monitoring
        tool = next((t for t in (3, 4) if mon.get_tool(t) is None), None)  # --loop takes 4 first
        if tool is None:
            return
        mon.use_tool_id(tool, "gpuleak retention")
        E = mon.events
        started = time.monotonic()
        calls = {}  # id(frame) -> start time, for calls from the main script's body
        owner = self

        def from_main_body(frame):
            caller = frame.f_back if frame is not None else None
            return caller is not None and caller.f_code.co_name == "<module>" and \
                caller.f_globals.get("__name__") == "__main__"

        def on_start(code, offset):
            try:  # an exception here would be raised in the program's code
                frame = sys._getframe(1)
                if not from_main_body(frame):
                    return mon.DISABLE if code not in watched else None
                if code not in watched:
                    watched.add(code)
                    mon.set_local_events(tool, code, E.PY_RETURN)
                calls[id(frame)] = time.monotonic()
            except Exception:
                pass
            return None

        def on_return(code, offset, value):
            try:
                began = calls.pop(id(sys._getframe(1)), None)
                if began is None or owner.returned:
                    return
                now = time.monotonic()
                if now - began >= 1.0 and now - began >= 0.5 * (now - started):
                    owner.returned = True
                    owner.run(RETURN)
                    # Done: nothing more is watched.
                    mon.set_events(tool, 0)
                    for c in watched:
                        mon.set_local_events(tool, c, 0)
            except Exception:
                pass

        watched = set()
        self.returned = False
        mon.register_callback(tool, E.PY_START, on_start)
        mon.register_callback(tool, E.PY_RETURN, on_return)
        mon.set_events(tool, E.PY_START)

    def at_oom(self):
        if self.oom_walks < MAX_OOM_WALKS:
            self.oom_walks += 1
            self.run(OOM)

    def _shim(self):
        if self.api is None:
            try:
                process = ctypes.CDLL(None)
                send = process.gpuleak_api_retention
                send.argtypes = [ctypes.c_int, ctypes.c_ulonglong, ctypes.c_ulonglong, ctypes.c_char_p]
                send.restype = ctypes.c_int
                active = process.gpuleak_api_active
                active.restype = ctypes.c_int
                self.api = (send, active)
            except (OSError, AttributeError):
                self.api = False
        return self.api

    def run(self, event, send=None):
        """One walk; its paths go to `send(event, address, bytes, text)` (the shim's by default).
        Never raises."""
        if self.busy:
            return None
        self.busy = True
        try:
            if send is None:
                api = self._shim()
                if not api or not api[1]():  # no shim, or it is not tracking (a fork that never used CUDA)
                    return None
                send = api[0]
            return self._walk_and_send(event, send)
        except Exception:  # never the program's problem
            return None
        finally:
            self.busy = False

    def _walk_and_send(self, event, send):
        handlers = _handlers()
        if not handlers:
            return None
        started = time.monotonic()
        was_enabled = gc.isenabled()
        gc.disable()  # no collection (and no finalizer) in the middle of the walk
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1000.0)  # the program's other threads wait: one consistent picture
        try:
            walk = _Walk(handlers, started + self.budget, sys._getframe())
            walk.run()
            paths = walk.paths()
            objects, stopped = len(walk.objs), walk.stopped
            walk = None
        finally:
            sys.setswitchinterval(interval)
            if was_enabled:
                gc.enable()
        for address, size, text in paths:
            send(event, address, size, text.encode("utf-8", "backslashreplace")[:MAX_TEXT])
        elapsed = time.monotonic() - started
        summary = "objects=%d paths=%d stopped=%s" % (objects, len(paths), stopped)
        send(event, 0, int(elapsed * 1e9), summary.encode())
        self.last = (objects, len(paths), stopped, elapsed)
        return paths


class _Walk:
    """The breadth-first search: node n is objs[n], reached from parent[n] (-1: a root, named in
    roots[n]); labels[n] names an edge get_referents does not show (the autograd graph)."""

    def __init__(self, handlers, deadline, own_frame):
        self.handlers = handlers
        self.classes = tuple(h[0] for h in handlers)
        self.deadline = deadline
        self.own_frame = own_frame
        self.index = {}
        self.objs = []
        self.parent = []
        self.roots = {}
        self.labels = {}
        self.found = {}  # data address -> (node, bytes): the first (shortest) path to it
        self.stopped = "none"
        self.kind_of = {}  # type -> handler index, or -1

    def add(self, obj, parent, root=None, label=None):
        i = id(obj)
        if i in self.index:
            return
        n = len(self.objs)
        self.index[i] = n
        self.objs.append(obj)
        self.parent.append(parent)
        if root is not None:
            self.roots[n] = root
        if label is not None:
            self.labels[n] = label

    def add_roots(self):
        skip = set()
        frame = self.own_frame
        while frame is not None and frame.f_code.co_filename == __file__:  # the walk, an OOM's __init__ wrapper
            skip.add(id(frame))
            frame = frame.f_back
        frames = []
        for top in sys._current_frames().values():
            chain = []
            f = top
            while f is not None:
                chain.append(f)
                f = f.f_back
            # Outermost first: a list that main() owns and passes down is named as main's local.
            frames.extend(reversed(chain))
        tb = getattr(sys, "last_traceback", None)
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        for f in frames:
            if id(f) in skip or f.f_code.co_filename == __file__:
                continue
            if f.f_locals is f.f_globals:  # a module's body: its locals are its globals, roots below
                continue
            for name, value in _frame_locals(f).items():
                self.add(value, -1, ("local", name, f.f_code.co_name, f.f_code.co_filename, f.f_lineno))
        modules = sorted(sys.modules.items(), key=lambda kv: kv[0] != "__main__")
        for mod_name, module in modules:
            if mod_name.startswith("gpuleak") or not isinstance(module, types.ModuleType):
                continue
            d = getattr(module, "__dict__", None)
            if not isinstance(d, dict):
                continue
            for name, value in list(d.items()):
                if name.startswith("__") and name.endswith("__"):
                    continue
                self.add(value, -1, ("global", name, mod_name))

    def kind(self, obj):
        t = type(obj)
        k = self.kind_of.get(t)
        if k is None:
            k = -1
            for j, h in enumerate(self.handlers):
                if issubclass(t, h[0]):
                    k = j
                    break
            self.kind_of[t] = k
        return k

    def run(self):
        self.add_roots()
        for n in range(len(self.objs)):  # the roots themselves
            k = self.kind(self.objs[n])
            if k >= 0:
                self.target(n, self.objs[n], k)
        modules = set(id(m) for m in sys.modules.values())
        start, depth = 0, 0
        get_referents = gc.get_referents
        index, objs, parent, atomic, kind_of, labels = self.index, self.objs, self.parent, _ATOMIC, self.kind_of, self.labels
        module_type = types.ModuleType
        while start < len(objs):
            end = len(objs)
            if depth > MAX_DEPTH:
                self.stopped = "depth"
                break
            for n in range(start, end):
                if (n & 4095) == 0:
                    if time.monotonic() > self.deadline:
                        self.stopped = "budget"
                        return
                    if n >= MAX_NODES:
                        self.stopped = "nodes"
                        return
                o = objs[n]
                if n in labels:  # reached through the autograd graph: a saved tensor, a .grad
                    k = self.kind(o)
                    if k >= 0:
                        self.target(n, o, k)
                if type(o) is module_type and id(o) in modules:  # a module's globals are roots already
                    continue
                for r in get_referents(o):
                    i = id(r)
                    if i in index:
                        continue
                    t = type(r)
                    if t in atomic:
                        continue
                    m = len(objs)
                    index[i] = m
                    objs.append(r)
                    parent.append(n)
                    # Targets are looked at when first reached, not when their turn comes: a walk
                    # that runs out of time has still seen every object one level further.
                    k = kind_of.get(t)
                    if k is None:
                        k = self.kind(r)
                    if k >= 0:
                        self.target(m, r, k)
            start, depth = end, depth + 1

    def target(self, n, o, k):
        cls, memory, tensor = self.handlers[k]
        try:
            got = memory(o)
        except Exception:  # a sparse tensor, a deleted JAX array: no storage to name
            got = None
        if got and got[0] and got[0] not in self.found:
            self.found[got[0]] = (n, int(got[1]))
        if tensor:
            self.autograd(n, o)

    def autograd(self, n, t):
        try:
            fn = t.grad_fn
            grad = t.grad
        except Exception:
            return
        if fn is not None and id(fn) not in self.index:
            self.add(fn, n, label=("grad_fn",))
            self.expand_node(len(self.objs) - 1)
        if grad is not None:
            self.add(grad, n, label=("grad",))

    def expand_node(self, m):
        """Follows a new autograd node's edges: its next functions, its saved tensors."""
        pending = [m]
        while pending:
            m = pending.pop()
            node = self.objs[m]
            for name in _saved_names(type(node)):
                try:
                    saved = getattr(node, name)
                except Exception:  # freed by backward, or not a tensor
                    continue
                for s in saved if isinstance(saved, (tuple, list)) else (saved,):
                    if s is not None and type(s) not in _ATOMIC and id(s) not in self.index:
                        self.add(s, m, label=("saved", name[len("_saved_"):]))
            try:
                nexts = node.next_functions
            except Exception:
                nexts = ()
            for pair in nexts or ():
                nxt = pair[0] if isinstance(pair, tuple) and pair else None
                if nxt is None or id(nxt) in self.index or type(nxt).__name__ == "AccumulateGrad":
                    continue
                self.add(nxt, m, label=("next",))
                pending.append(len(self.objs) - 1)

    def paths(self):
        out = []
        for address, (n, size) in self.found.items():
            if len(out) >= MAX_PATHS:
                break
            chain = []
            while n >= 0:
                chain.append(n)
                n = self.parent[n]
            chain.reverse()
            try:
                out.append((address, size, self.describe(chain)))
            except Exception:
                continue
        return out

    def describe(self, chain):
        """"`history` (list, local of main at train.py:44) -> [53 items] -> Tensor -> its autograd
        graph (MseLossBackward0 -> AddmmBackward0 saved mat1)"."""
        objs = self.objs
        first = objs[chain[0]]
        root = self.roots.get(chain[0], ("global", "?", "?"))
        steps = []
        i = 1
        if root[0] == "local":
            head = "`%s` (%s, local of %s at %s:%d)" % (root[1], _type_name(first), root[2],
                                                         os.path.basename(root[3]), root[4])
        else:
            head = "`%s.%s` (%s, module global)" % (root[2], root[1], _type_name(first))
            # A class attribute: the class's __dict__, then the value.
            if isinstance(first, type) and len(chain) > 2 and _is_class_dict(first, objs[chain[1]]):
                name = _key_of(objs[chain[1]], objs[chain[2]])
                if name is not None:
                    head = "`%s.%s.%s` (%s, class attribute)" % (root[2], root[1], name.strip("'"),
                                                                 _type_name(objs[chain[2]]))
                    i = 3
        steps.append(head)
        graph = []
        while i < len(chain):
            n = chain[i]
            parent, child = objs[chain[i - 1]], objs[n]
            label = self.labels.get(n)
            if label is not None:
                if label[0] == "grad":
                    steps.append(".grad (%s)" % _type_name(child))
                elif label[0] == "saved":
                    if graph:
                        graph[-1] += " saved " + label[1]
                else:
                    graph.append(type(child).__name__)
                i += 1
                continue
            if graph:
                steps.append("its autograd graph (%s)" % " -> ".join(graph))
                graph = []
            step, i = self.hop(chain, i)
            steps.append(step)
        if graph:
            steps.append("its autograd graph (%s)" % " -> ".join(graph))
        return " -> ".join(steps)

    def hop(self, chain, i):
        """The text of the edge into chain[i] (and the next index: an object's __dict__ and a
        function's closure are one step with what they hold)."""
        objs = self.objs
        parent, child = objs[chain[i - 1]], objs[chain[i]]
        if isinstance(parent, (list, tuple, set, frozenset)) or type(parent).__name__ == "deque":
            return "[%d items] -> %s" % (len(parent), _type_name(child)), i + 1
        if isinstance(parent, dict):
            key = _key_of(parent, child)
            if key is None:
                return "(a key of a dict) %s" % _type_name(child), i + 1
            return "[%s] -> %s" % (key, _type_name(child)), i + 1
        owner_dict = getattr(parent, "__dict__", None)
        if isinstance(parent, type) and _is_class_dict(parent, child):
            owner_dict = child
        if owner_dict is not None and child is owner_dict and i + 1 < len(chain):
            value = objs[chain[i + 1]]
            name = _key_of(child, value)
            if name is not None:
                return ".%s (%s)" % (name.strip("'"), _type_name(value)), i + 2
        if isinstance(owner_dict, dict) and not isinstance(parent, type):
            # 3.11+: an object's attributes may live in the object itself, with no dict in between.
            name = _key_of(owner_dict, child)
            if name is not None:
                return ".%s (%s)" % (name.strip("'"), _type_name(child)), i + 1
        if isinstance(parent, types.FunctionType) and child is parent.__closure__ and i + 2 < len(chain):
            cell, value = objs[chain[i + 1]], objs[chain[i + 2]]
            names = parent.__code__.co_freevars
            for j, c in enumerate(child):
                if c is cell and j < len(names):
                    return "closure variable `%s` (%s)" % (names[j], _type_name(value)), i + 3
        if isinstance(parent, types.FrameType):
            for name, value in _frame_locals(parent).items():
                if value is child:
                    return "local `%s` of %s at %s:%d (%s)" % (name, parent.f_code.co_name,
                                                              os.path.basename(parent.f_code.co_filename),
                                                              parent.f_lineno, _type_name(child)), i + 1
        for name in _slot_names(type(parent)):
            try:
                if getattr(parent, name) is child:
                    return ".%s (%s)" % (name, _type_name(child)), i + 1
            except Exception:
                continue
        return _type_name(child), i + 1


def _frame_locals(frame):
    """A copy of a frame's locals. Before 3.13 reading f_locals of a function's frame leaves a
    snapshot dict on the frame that would keep a value alive after the function drops it: the
    snapshot is emptied again (the next reader fills it anew)."""
    try:
        d = frame.f_locals
        copy = dict(d)
        if sys.version_info < (3, 13) and frame.f_code.co_flags & 1 and isinstance(d, dict):  # CO_OPTIMIZED
            d.clear()
        return copy
    except Exception:
        return {}


def _key_of(d, value):
    """How dict `d` refers to `value`: "'name'" or a short repr of the key; None when it does not."""
    try:
        if len(d) > 100_000:
            return "..."
        for k, v in d.items():
            if v is value:
                return repr(k)[:60] if not isinstance(k, str) else "'%s'" % k[:60]
            if k is value:
                return None
    except Exception:
        return None
    return None


_SAVED = {}


def _saved_names(cls):
    names = _SAVED.get(cls)
    if names is None:
        try:
            names = [n for n in dir(cls) if n.startswith("_saved_")]
        except Exception:
            names = []
        _SAVED[cls] = names
    return names


def _slot_names(cls):
    out = []
    for c in getattr(cls, "__mro__", ()):
        slots = c.__dict__.get("__slots__", ())
        out.extend([slots] if isinstance(slots, str) else slots)
    return out


def _type_name(obj):
    return type(obj).__name__


def _is_class_dict(cls, d):
    """Whether `d` is the dict behind the class's __dict__ (a mappingproxy of it)."""
    return isinstance(d, dict) and any(x is d for x in gc.get_referents(cls.__dict__))
