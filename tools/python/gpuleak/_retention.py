"""Who keeps it alive (issue #30): the Python reference path from a root the user can name to every
live object that owns GPU memory, sent to the shim at exit and at an out-of-memory.

install_retention() (called by _hooks.install_from_environment, and by any bootstrap that runs the
same hooks) registers an atexit handler, watches the frameworks' out-of-memory exceptions and, on
3.12+, the return of the main script's main(). Each walk is a census, then a forward breadth-first
search from the roots over gc.get_referents with parent links, so the first time an object is
reached is by a shortest path:
  census     every live target object (gc.get_objects(), in C; jax.live_arrays()): the addresses
             to find; the search stops when each has its path
  roots      tier 1, searched first: the locals of every thread's live frames (outermost first),
             the frames of an uncaught exception's traceback (sys.last_traceback), the globals of
             __main__ and of the user's modules; tier 2, for what tier 1 left: the other modules'
             globals. A module or a module's dict reached from a root is not entered (its globals
             are roots), nor a code object
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
2 at an out-of-memory, 3 when the main script's main() returned), then one summary call with
address 0 (bytes: the walk's duration in ns; text: "objects=N paths=M stopped=REASON"). The
analysis joins the paths to the leaks by address.
"""

import abc
import atexit
import ctypes
import gc
import itertools
import os
import sys
import time
import types

EXIT, OOM, RETURN = 1, 2, 3
DEFAULT_BUDGET = 2.0
MAX_DEPTH = 64  # hops from a root
MAX_NODES = 5_000_000  # objects visited
MAX_PATHS = 20_000  # paths sent per walk
UNHELD_CHECK = 16_384  # every so many objects searched, the census is checked for objects only C holds ...
UNHELD_MAX = 16  # ... when it has at most this many left
MAX_OOM_WALKS = 2  # a program that catches OOMs and retries pays for the first ones only
MIN_RETURN_RUN = 1.0  # seconds a top-level call of the user's (main()) runs before its return gets a walk
QUIET_CALLS = 32  # short top-level calls in a row of one function before it is no longer watched
MAX_TEXT = 4000
_ATOMIC = frozenset([int, float, complex, str, bytes, bool, type(None), type(Ellipsis)])
# Reached but never entered: no references (the atomic types), or none to program data (a code
# object's constants, names and line table: a tenth to a third of a large library's objects).
_SKIP = _ATOMIC | frozenset([types.CodeType])
_HAVE_GC = 1 << 14  # Py_TPFLAGS_HAVE_GC: the collector lists every object of such a class
_compress = itertools.compress


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
    """(class, memory function, "tensor" when its autograd graph is followed, the framework's own
    list of its live objects or None), for the imported frameworks only."""
    out = []
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(getattr(torch, "Tensor", None), type):
            out.append((torch.Tensor, _torch_memory, True, None))
        if isinstance(getattr(torch, "UntypedStorage", None), type):
            out.append((torch.UntypedStorage, _storage_memory, False, None))
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(getattr(cupy, "ndarray", None), type):
        out.append((cupy.ndarray, _cupy_memory, False, None))
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(getattr(jax, "Array", None), type):
        # jax.Array is an abstract class that C++'s ArrayImpl registers with: JAX lists its arrays.
        out.append((jax.Array, _jax_memory, False, getattr(jax, "live_arrays", None)))
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

    def watch_main_return(self, user=None):
        """3.12+: one more walk when a function of the user's own code that the main script's body
        called (`main()`, also through a library's decorator: hydra, fire) returns after running at
        least MIN_RETURN_RUN seconds and twice as long as any earlier one that got such a walk,
        while its frame and locals are still live: a leak kept in a local of main is freed before
        exit. Such a walk searches the first tier of roots only (the frames, the user's modules):
        what a library holds is named at exit.

        Neither an import (`import torch` from the script's body runs seconds of the import
        system's and the library's code) nor a module's body is such a call. sys.monitoring:
        PY_START once per code object (DISABLE unless it is one), then PY_START and PY_RETURN on
        those code objects only, until QUIET_CALLS short calls in a row let one go (a step() called
        from a module-level loop costs a few dozen callbacks, then nothing)."""
        mon = sys.monitoring
        tool = next((t for t in (3, 4) if mon.get_tool(t) is None), None)  # --loop takes 4 first
        if tool is None:
            return
        if user is None:
            from gpuleak import _observe  # the loop observer's line between the user's files and the rest
            user = _observe.UserCode().file
        mon.use_tool_id(tool, "gpuleak retention")
        E = mon.events
        calls = {}  # id(frame) -> start time, for the calls watched
        short = {}  # code -> short calls in a row
        owner = self

        def top_level(frame):
            """Whether the first frame of user code above `frame` is the main script's body."""
            f = frame.f_back
            while f is not None and not user(f.f_code.co_filename):
                f = f.f_back
            return f is not None and f.f_code.co_name == "<module>" and f.f_globals.get("__name__") == "__main__"

        def on_start(code, offset):
            try:  # an exception here would be raised in the program's code
                if code in dropped:
                    return mon.DISABLE
                if code not in watched and (code.co_name == "<module>" or not user(code.co_filename)):
                    return mon.DISABLE
                frame = sys._getframe(1)
                if not top_level(frame):  # a call from deeper in the program
                    return None if code in watched else mon.DISABLE
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
                if began is None:
                    return None
                ran = time.monotonic() - began
                if ran < MIN_RETURN_RUN or ran < 2 * owner.walked_run:
                    short[code] = short.get(code, 0) + 1
                    if short[code] >= QUIET_CALLS:  # a step() of a module-level loop: let it go
                        mon.set_local_events(tool, code, 0)
                        dropped.add(code)
                        return mon.DISABLE
                    return None
                short[code] = 0
                owner.walked_run = ran
                owner.run(RETURN)
            except Exception:
                pass
            return None

        watched, dropped = set(), set()
        self.walked_run = 0.0
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
            walk.run(tiers=(1,) if event == RETURN else (1, 2))
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
    roots[n]); labels[n] names an edge get_referents does not show (the autograd graph).

    Targeted: a census first (every live object of a framework's class, from the collector's own
    list, in C) says which data addresses there are to find; the search stops as soon as each has
    its path. The roots come in two tiers, each searched in full before the next: the program's
    own (live frames, __main__ and the user's modules: what a leak's owner usually is, and a few
    thousand objects), then the libraries' module globals (a large framework's hundreds of
    thousands of functions, classes and tables), entered only for what the first tier left."""

    def __init__(self, handlers, deadline, own_frame):
        self.handlers = handlers
        self.deadline = deadline
        self.own_frame = own_frame
        self.index = {}  # id -> node; -1: seen, never entered (a module, a module's dict)
        self.objs = []
        self.parent = []
        self.roots = {}
        self.labels = {}
        self.found = {}  # data address -> (node, bytes): the first (shortest) path to it
        self.stopped = "none"
        self.kind_of = {}  # type -> handler index, or -1
        self.graph_nodes = []  # nodes the autograd graph added, their targets checked in their turn
        self.wanted = None  # the census's addresses not found yet; None: no census (search it all)
        self.census_objs = {}  # address -> the census's objects that own it
        self.unheld_checked = 0  # how many census objects drop_unheld() last looked at
        self.keys = _Keys()

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
            self.graph_nodes.append(n)

    def census(self):
        """The data addresses of every live target object, or None when some of them may be
        missing from gc.get_objects() (a class whose objects the collector does not track, an
        abstract base class whose registered classes may be anything): then nothing stops the
        search early."""
        listed = []
        for cls, _, _, live in self.handlers:
            if live is not None:
                listed.append(live)
            elif not cls.__flags__ & _HAVE_GC or isinstance(cls, abc.ABCMeta):
                return None
        every = gc.get_objects()
        try:
            for live in listed:
                every.extend(live())
            kinds = list(map(type, every))
            hit = frozenset(t for t in set(kinds) if self.kind(t) >= 0)
            for o in _compress(every, map(hit.__contains__, kinds)):
                got = self.memory(o)
                if got:
                    objs = self.census_objs.setdefault(got[0], [])
                    if not any(x is o for x in objs):  # listed by both
                        objs.append(o)
            return set(self.census_objs)
        except Exception:  # a framework's list failed: no census, the whole search
            self.census_objs = {}
            return None
        finally:
            every = kinds = o = objs = None

    def drop_unheld(self):
        """Takes off the census the addresses whose objects no Python object refers to (C++
        alone holds them, as it holds a tensor whose Python object PyTorch keeps for it): no path
        reaches them, and searching every library object to learn that would cost the whole
        budget. gc.get_referrers is one pass over the collector's objects per call, in C, whose
        cost grows with the objects asked about: only a few are (UNHELD_MAX), once per set."""
        if len(self.wanted) > UNHELD_MAX:
            return
        rest = [o for a in self.wanted for o in self.census_objs.get(a, ())]
        if not rest or len(rest) > UNHELD_MAX or len(rest) == self.unheld_checked:
            return
        self.unheld_checked = len(rest)  # the set only shrinks: its size names it
        mine = set(map(id, self.census_objs.values()))
        mine.add(id(rest))
        held = set()
        try:
            for holder in gc.get_referrers(*rest):
                if id(holder) not in mine:
                    held.update(map(id, gc.get_referents(holder)))
        finally:
            holder = None
        for a in list(self.wanted):
            if not any(id(o) in held for o in self.census_objs.get(a, ())):
                self.wanted.discard(a)
        rest = None

    def memory(self, o):
        """(address, bytes) of the GPU memory a target owns, or None."""
        try:
            got = self.handlers[self.kind(type(o))][1](o)
        except Exception:  # a sparse tensor, a deleted JAX array: no storage to name
            return None
        return got if got and got[0] else None

    def frames(self):
        """Every thread's live frames, outermost first (a list that main() owns and passes down is
        named as main's local), then an uncaught exception's traceback; the walk's own left out."""
        skip = set()
        frame = self.own_frame
        while frame is not None and frame.f_code.co_filename == __file__:  # the walk, an OOM's __init__ wrapper
            skip.add(id(frame))
            frame = frame.f_back
        out = []
        for top in sys._current_frames().values():
            chain = []
            f = top
            while f is not None:
                chain.append(f)
                f = f.f_back
            out.extend(reversed(chain))
        tb = getattr(sys, "last_traceback", None)
        while tb is not None:
            out.append(tb.tb_frame)
            tb = tb.tb_next
        return [f for f in out if id(f) not in skip and f.f_code.co_filename != __file__]

    def add_roots(self, tier, user):
        """Tier 1: the frames' locals, then the globals of __main__ and of the user's modules;
        tier 2: the other modules' globals. Returns the first node added."""
        first = len(self.objs)
        if tier == 1:
            for f in self.frames():
                if f.f_locals is f.f_globals:  # a module's body: its locals are its globals, roots below
                    continue
                for name, value in _frame_locals(f).items():
                    self.add(value, -1, ("local", name, f.f_code.co_name, f.f_code.co_filename, f.f_lineno))
        modules = sorted(sys.modules.items(), key=lambda kv: kv[0] != "__main__")
        for mod_name, module in modules:
            if mod_name.startswith("gpuleak") or not isinstance(module, types.ModuleType):
                continue
            mine = mod_name == "__main__" or user(getattr(module, "__file__", None))
            if mine != (tier == 1):
                continue
            d = getattr(module, "__dict__", None)
            if not isinstance(d, dict):
                continue
            for name, value in list(d.items()):
                if name.startswith("__") and name.endswith("__"):
                    continue
                self.add(value, -1, ("global", name, mod_name))
        return first

    def kind(self, t):
        k = self.kind_of.get(t)
        if k is None:
            k = -1
            for j, h in enumerate(self.handlers):
                if issubclass(t, h[0]):
                    k = j
                    break
            self.kind_of[t] = k
        return k

    def run(self, tiers=(1, 2), user=None):
        if user is None:
            from gpuleak import _observe  # the loop observer's line between the user's files and the rest
            user = _observe.UserCode().file
        self.wanted = self.census()
        if self.wanted is not None and not self.wanted:
            return  # no GPU memory owned by a Python object: nothing to name
        # A module's globals are roots, under their own names: neither the module nor its dict (a
        # function's __globals__) is entered.
        for module in list(sys.modules.values()):
            if isinstance(module, types.ModuleType):
                self.index.setdefault(id(module), -1)
                d = getattr(module, "__dict__", None)
                if isinstance(d, dict):
                    self.index.setdefault(id(d), -1)
        for tier in tiers:
            if tier == 2 and self.wanted:
                self.drop_unheld()
                if not self.wanted:
                    return
            first = self.add_roots(tier, lambda path: isinstance(path, str) and bool(path) and user(path))
            for n in range(first, len(self.objs)):  # the roots themselves
                k = self.kind(type(self.objs[n]))
                if k >= 0:
                    self.target(n, self.objs[n], k)
            if not self.search(first):
                return

    def graph_targets(self):
        """Looks at the targets among the nodes the autograd graph added (saved tensors, .grad):
        get_referents never shows them, so they are not looked at when reached."""
        while self.graph_nodes:
            pending, self.graph_nodes = self.graph_nodes, []
            for n in pending:
                k = self.kind(type(self.objs[n]))
                if k >= 0:
                    self.target(n, self.objs[n], k)

    def complete(self):
        """Whether every address of the census has its path (the graph's saved tensors first:
        they may own memory that no object of the census names)."""
        self.graph_targets()
        return self.wanted is not None and not self.wanted

    def search(self, start):
        """The levels from node `start` on; False when the search is over (everything found, or a
        bound reached: said in self.stopped)."""
        get_referents = gc.get_referents
        index, objs, skip, kind_of = self.index, self.objs, _SKIP, self.kind_of
        add_obj, add_parent = objs.append, self.parent.append
        depth = 0
        while start < len(objs):
            end = len(objs)
            if depth > MAX_DEPTH:
                self.stopped = "depth"
                return False
            for n in range(start, end):
                if (n & 1023) == 0:
                    if self.complete():
                        return False
                    if (n & (UNHELD_CHECK - 1)) == 0 and n and self.wanted:
                        self.drop_unheld()
                        if self.complete():
                            return False
                    if time.monotonic() > self.deadline:
                        self.stopped = "budget"
                        return False
                    if n >= MAX_NODES:
                        self.stopped = "nodes"
                        return False
                o = objs[n]
                if type(o) in skip:
                    continue
                for r in get_referents(o):
                    t = type(r)
                    if t in skip:  # an int, a string, a code object: never a path to memory
                        continue
                    i = id(r)
                    if i in index:
                        continue
                    index[i] = m = len(objs)
                    add_obj(r)
                    add_parent(n)
                    # Targets are looked at when first reached, not when their turn comes: a walk
                    # that runs out of time has still seen every object one level further.
                    k = kind_of.get(t)
                    if k is None:
                        k = self.kind(t)
                    if k >= 0:
                        self.target(m, r, k)
            if self.complete():
                return False
            start, depth = end, depth + 1
        return True

    def target(self, n, o, k):
        got = self.memory(o)
        if got and got[0] not in self.found:
            self.found[got[0]] = (n, int(got[1]))
            if self.wanted is not None:
                self.wanted.discard(got[0])
        if self.handlers[k][2]:
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
                name = self.keys(objs[chain[1]], objs[chain[2]])
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
            key = self.keys(parent, child)
            if key is None:
                return "(a key of a dict) %s" % _type_name(child), i + 1
            return "[%s] -> %s" % (key, _type_name(child)), i + 1
        owner_dict = getattr(parent, "__dict__", None)
        if isinstance(parent, type) and _is_class_dict(parent, child):
            owner_dict = child
        if owner_dict is not None and child is owner_dict and i + 1 < len(chain):
            value = objs[chain[i + 1]]
            name = self.keys(child, value)
            if name is not None:
                return ".%s (%s)" % (name.strip("'"), _type_name(value)), i + 2
        if isinstance(owner_dict, dict) and not isinstance(parent, type):
            # 3.11+: an object's attributes may live in the object itself, with no dict in between.
            name = self.keys(owner_dict, child)
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


class _Keys:
    """How a dict refers to a value: "'name'" or a short repr of the key; None when it does not
    (or holds it as a key). A dict that many paths go through (10,000 sessions in one dict) is
    read once into a map from value to key, not once per path."""

    BIG = 64

    def __init__(self):
        self.maps = {}  # id(dict) -> {id(value): key, or None when the value is first a key}

    def __call__(self, d, value):
        try:
            if len(d) < self.BIG:
                for k, v in d.items():
                    if v is value:
                        return _key_text(k)
                    if k is value:
                        return None
                return None
            m = self.maps.get(id(d))
            if m is None:
                m = self.maps[id(d)] = {}
                for k, v in d.items():
                    m.setdefault(id(v), k)
                    m.setdefault(id(k), _AS_KEY)
            k = m.get(id(value), _AS_KEY)
            return None if k is _AS_KEY else _key_text(k)
        except Exception:
            return None


_AS_KEY = object()


def _key_text(k):
    return repr(k)[:60] if not isinstance(k, str) else "'%s'" % k[:60]


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
