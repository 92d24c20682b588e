"""JAX's arena seen per array (issue #27), with no allocator switch. JAX's default allocator
preallocates one arena (75 % of the GPU) and hands its buffers out inside it, so the shim sees
one cudaMalloc. What JAX itself offers is sampled instead, at each iteration boundary
(gpuleak.iterate/iteration, `gpuleak run --loop`, and gpuleak.at_boundary for a loop observer),
at exit and at an out-of-memory:

- jax.live_arrays(): every live array; each array's `traceback` (on by default) gives its call
  site, the user's line for an eager op or for a jitted call's output; `unsafe_buffer_pointer()`
  and `nbytes` place it inside the arena the shim saw.
- Only the arrays new since the last sample are reported (op 1, with the traceback's frames
  interned once per traceback: gpuleak_api_python_frames), and those gone since (op 2), all of a
  sample in one call (gpuleak_api_pool_objects32). A leak is what survives boundaries, so the
  verdict, the line and the rate come from the arrays; temporaries inside a jitted step are never
  seen (they live and die between two samples).

Out of memory: XLA raises RESOURCE_EXHAUSTED from inside its arena and no CUDA call fails, so the
shim sees nothing. The exception class's __init__ is wrapped (jax.errors.JaxRuntimeError, or
XlaRuntimeError on older JAX): CPython builds the exception object when the C++ code raises it
(3.12) or when a handler or the top level first looks at it (3.10, 3.11), on the raising thread,
so this sees every such error, caught or not, and costs nothing on any other path. At that moment
the live arrays are sampled, then an OOM record carries the request size parsed from the error
text and the arena's bytes in use, largest free block and limit (Device.memory_stats()).
(sys.monitoring's RAISE event would see it too, but fires for every exception in every frame it
unwinds through, needs a tool id of its own, and exists on 3.12+ only.)

`gpuleak run --jax per-buffer` instead asks XLA for a per-buffer allocator before JAX starts:
per_buffer_allocator() reads which names the installed JAX accepts (below). Under a per-buffer
allocator, the user's or that one, the arrays are still sampled at the boundaries: XLA makes a
jitted step's outputs on a thread of its own, and the array at a buffer's address gives that
buffer the user's line (attach()).
"""

import array as _array
import atexit
import ctypes
import os
import re
import sys
import threading
import time
import weakref

JAX = 3  # the framework number of gpuleak_api_pool_object / _framework_oom
NEW = 1 | JAX << 24  # an object's first word in a sample (_Shim.objects), with its device << 8
GONE = 2 | JAX << 24

SAMPLED = "live arrays at each iteration boundary, at exit and at an out-of-memory; temporaries inside a jitted " \
          "step are not seen"


def _warn(message):
    sys.stderr.write("gpuleak: " + message + "\n")


class _Shim:
    def __init__(self, process):
        self.frames = process.gpuleak_api_python_frames
        self.frames.argtypes = [ctypes.c_uint, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p),
                                ctypes.POINTER(ctypes.c_int)]
        self.frames.restype = ctypes.c_uint
        # objects32(n, words_high, words_low): one sample's n objects in one call, four 64-bit
        # words each, the words' address as two halves (C ints only, passed with no argtypes; src/
        # shim/c_api.cpp). An older shim has only the call per object.
        self.objects32 = getattr(process, "gpuleak_api_pool_objects32", None)
        if self.objects32 is None:
            self.object = process.gpuleak_api_pool_object
            self.object.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_ulonglong, ctypes.c_ulonglong, ctypes.c_int,
                                    ctypes.c_uint]
            self.object.restype = ctypes.c_int
        self.oom = process.gpuleak_api_framework_oom
        self.oom.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_ulonglong] * 4
        self.oom.restype = ctypes.c_int
        self.attached = process.gpuleak_api_pool_attached
        self.attached.argtypes = [ctypes.c_int, ctypes.c_char_p]
        self.attached.restype = None

    def objects(self, words):
        """Records a sample: `words` holds four ints an object (op | device << 8, address, size,
        site), the objects gone first."""
        if self.objects32 is not None:
            buf = _array.array("Q", words)
            address = buf.buffer_info()[0]
            self.objects32(len(words) // 4, address >> 32, address & 0xFFFFFFFF)
            return
        for i in range(0, len(words), 4):
            op = words[i]
            self.object(op & 0xFF, (op >> 8) & 0xFFFF, words[i + 1], words[i + 2], JAX, words[i + 3])


def _shim():
    try:
        return _Shim(ctypes.CDLL(None))
    except (OSError, AttributeError):
        return None


def _text(s):
    return str(s).encode("utf-8", "backslashreplace").split(b"\0", 1)[0]


def _cuda_ordinal(device):
    hw = getattr(device, "local_hardware_id", None)
    return hw if isinstance(hw, int) and hw >= 0 else getattr(device, "id", 0)


def _on_gpu(device):
    return getattr(device, "platform", "gpu") not in ("cpu", "tpu")


# An object's identity as a dict key: object.__hash__ is the pointer rotated by four bits, as
# unique as id(), for arrays too (jax's are unhashable: their class's __hash__ is None). id() raises
# the builtins.id audit event, and a JAX process has an audit hook: id() measured 0.44-0.51 us
# against 0.10 for weakref.ref() on the H100 host (bench/jax_sample_parts.py), a third of a new
# array's cost with three of them.
_identity = object.__hash__

OFF_GPU = -1  # a sharding's placement (Sampler._placement): on no GPU, or not one device (GENERAL)
GENERAL = -2
NESTED_SPACING = 9  # sample durations between two samples at nested loops' passes (Sampler._affordable)


class Sampler:
    """The arrays seen live at the last sample, and the interned sites of their tracebacks."""

    def __init__(self, jax, shim):
        self.jax = jax
        self.shim = shim
        self.lock = threading.RLock()  # an OOM raised while sampling samples again on the same thread
        self.seen = {}  # _identity(array) -> (weak reference or None, the words that report it gone)
        self.sites = {}  # traceback -> py stack id
        self.last_site = (None, 0)  # the last traceback object looked up, and its id
        self.placements = {}  # _identity(sharding) -> (sharding, device ordinal, sizes by aval) (_place())
        self.device_sizes = None  # whether the arrays have on_device_size_in_bytes (the first seen says)
        self.samples = 0
        self.open = False  # an iteration began and has not ended
        self.last_end = 0.0  # perf_counter() when the last sample ended, and what it took
        self.last_cost = 0.0
        if hasattr(os, "register_at_fork"):  # a child's capture interns its own stacks, under a lock of its own
            os.register_at_fork(after_in_child=self._forget)

    def _forget(self):
        # The child's own: a fork while another thread sampled must not leave the lock held for ever.
        self.lock = threading.RLock()
        self.seen = {}
        self.sites = {}
        self.placements = {}
        self.last_site = (None, 0)

    def site(self, array):
        """The shim's id of the array's creation traceback (innermost frame first), 0 when none."""
        tb = getattr(array, "traceback", None)
        if tb is None:
            return 0
        if tb is self.last_site[0]:  # the outputs of one jitted call share their traceback object
            return self.last_site[1]
        sid = self._site(tb)
        self.last_site = (tb, sid)
        return sid

    def _site(self, tb):
        try:
            known = self.sites.get(tb)
        except TypeError:  # an unhashable traceback: interned every time
            known = None
            tb_key = None
        else:
            tb_key = tb
        if known is not None:
            return known
        frames = list(getattr(tb, "frames", ()) or ())
        n = len(frames)
        if n == 0:
            return 0
        files = (ctypes.c_char_p * n)(*[_text(f.file_name) for f in frames])
        functions = (ctypes.c_char_p * n)(*[_text(f.function_name) for f in frames])
        lines = (ctypes.c_int * n)(*[int(f.line_num or 0) for f in frames])
        sid = self.shim.frames(n, files, functions, lines)
        if sid and tb_key is not None:
            if len(self.sites) > 65536:
                self.sites.clear()
            self.sites[tb_key] = sid
        return sid

    def _placement(self, sharding):
        """(sharding, device ordinal or OFF_GPU or GENERAL, {aval identity: (aval, bytes)}), kept
        by the sharding object's identity (the entry holds the object: the identity stays its)."""
        ordinal = GENERAL
        try:
            devices = sharding.device_set
            if len(devices) == 1:
                device = next(iter(devices))
                ordinal = _cuda_ordinal(device) if _on_gpu(device) else OFF_GPU
        except Exception:
            pass
        if len(self.placements) > 4096:
            self.placements.clear()
        placed = self.placements[_identity(sharding)] = (sharding, ordinal, {})
        return placed

    @staticmethod
    def _buffers_general(array):
        if array.is_deleted():
            return []
        shards = None
        try:
            devices = array.devices()
            if len(devices) == 1:
                device = next(iter(devices))
                if not _on_gpu(device):
                    return []
                return [(_cuda_ordinal(device), array.unsafe_buffer_pointer(), array.nbytes)]
            shards = array.addressable_shards
        except Exception:
            return []
        out = []
        for shard in shards or ():
            try:
                data = shard.data
                if _on_gpu(shard.device):
                    out.append((_cuda_ordinal(shard.device), data.unsafe_buffer_pointer(), data.nbytes))
            except Exception:
                continue
        return out

    def sample(self):
        """Reports the arrays new since the last sample and those gone; the GIL keeps the list."""
        with self.lock:
            self._sample()

    def _sample(self):
        # The work per array is the sampler's cost (a training step replaces every parameter, so
        # every array of a sample is new and every one of the last gone): an array seen before
        # costs a dict lookup, a gone one its stored words, a new one _place() (docs/python.md,
        # "JAX").
        try:
            live = self.jax.live_arrays()
        except Exception:
            return
        self.samples += 1
        seen, now = self.seen, {}
        words = []  # the sample for the shim: four words an object (_Shim.objects), the gone first
        new = []
        for array in live:
            key = _identity(array)
            entry = seen.pop(key, None)
            if entry is not None:
                ref = entry[0]
                if ref is None or ref() is array:
                    now[key] = entry
                    continue
                words += entry[1]  # its identity was reused: the array seen before is gone
            new.append((key, array))
        # The arrays gone first: a new array may sit at a gone one's address (the arena, or a
        # per-buffer allocator, handed the freed buffer out again since the last sample).
        for entry in seen.values():
            words += entry[1]
        if new:
            if self.device_sizes is None:
                self.device_sizes = callable(getattr(new[0][1], "on_device_size_in_bytes", None))
            for key, array in new:
                placed = self._place(array)
                if placed is None:
                    continue
                news, gones = placed
                words += news
                try:
                    ref = weakref.ref(array)
                except TypeError:
                    ref = None
                now[key] = (ref, gones)
        if words:
            self.shim.objects(words)
        self.seen = now

    def _place(self, array):
        """(the words reporting the array new, those reporting it gone), or None when none of its
        buffers is on a GPU.

        The common case, one buffer on one device, costs one call into jaxlib's C++, the address
        (unsafe_buffer_pointer()). The device comes from the array's sharding object and the size
        from its aval within that sharding: a jitted function's outputs share both objects from
        call to call, so the device is looked up once per sharding object and the size
        (on_device_size_in_bytes(), the buffer's bytes in the arena; nbytes where jaxlib lacks it)
        once per aval object there. jax's own devices() and nbytes are Python properties, and
        on_device_size_in_bytes() costs twice the address (docs/python.md, "JAX"). Anything else
        (several shards, no sharding attribute) takes the general way."""
        try:
            sharding = array.sharding
            placed = self.placements.get(_identity(sharding))
            if placed is None or placed[0] is not sharding:
                placed = self._placement(sharding)
            device = placed[1]
            if device == OFF_GPU:
                return None
            if device >= 0:
                address = array.unsafe_buffer_pointer()
                if not address or device > 0x7FFF:
                    return None
                aval = getattr(array, "aval", None)
                known = placed[2].get(_identity(aval))
                if known is not None and known[0] is aval:
                    size = known[1]
                else:
                    size = array.on_device_size_in_bytes() if self.device_sizes else array.nbytes
                    if aval is not None:
                        if len(placed[2]) > 4096:
                            placed[2].clear()
                        placed[2][_identity(aval)] = (aval, size)
                return (NEW | device << 8, address, size, self.site(array)), (GONE | device << 8, address, 0, 0)
        except Exception:  # no sharding attribute, deleted since the listing, or an array of another kind
            pass
        try:
            bufs = self._buffers_general(array)
        except Exception:
            return None
        news, gones = (), ()
        sid = self.site(array) if bufs else 0
        for device, address, size in bufs:
            if address and 0 <= device <= 0x7FFF:
                news += (NEW | device << 8, address, size, sid)
                gones += (GONE | device << 8, address, 0, 0)
        return (news, gones) if news else None

    def on_boundary(self, event, nested=False):
        # Once per iteration: at its end, or at a begin that closes the last one implicitly (the C
        # API's rule). Sampling at both would double the cost and see only what the loop's own
        # fetch of the next item made in between.
        if event == "end" or self.open:
            if not nested or self._affordable():
                self.timed_sample()
        self.open = event == "begin"

    def _affordable(self):
        """A nested loop's pass (an inner loop of eager ops, passes of microseconds) is sampled only
        when NESTED_SPACING sample durations have passed since the last sample ended: at most about
        a tenth of the program's time goes to sampling at such passes, where sampling at every pass
        would cost a listing of every live array per pass. An outermost loop's passes and marked
        iterations are always sampled."""
        return time.perf_counter() - self.last_end >= NESTED_SPACING * self.last_cost

    def timed_sample(self):
        start = time.perf_counter()
        self.sample()
        self.last_end = time.perf_counter()
        self.last_cost = self.last_end - start

    # --- out of memory ---------------------------------------------------------------------------

    def on_oom(self, text):
        self.sample()
        requested = request_size(text)
        device = oom_device(text)
        in_use = largest = limit = 0
        try:
            devices = [d for d in self.jax.local_devices() if _on_gpu(d)]
            pick = next((d for d in devices if _cuda_ordinal(d) == device), devices[0] if devices else None)
            if pick is not None:
                if device < 0:
                    device = _cuda_ordinal(pick)
                stats = pick.memory_stats() or {}
                in_use = int(stats.get("bytes_in_use", 0))
                largest = int(stats.get("largest_free_block_bytes", 0))
                limit = int(stats.get("bytes_limit", 0))
        except Exception:
            pass
        self.shim.oom(JAX, device, requested, in_use, largest, limit)


_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30,
          "TIB": 1 << 40}


def request_size(text):
    """The bytes XLA failed to get, from its error text; 0 when the text does not say."""
    for pattern in (r"\((\d+)B\)", r"allocate (\d+) bytes", r"rounded to (\d+)", r"requested (\d+) bytes"):
        m = re.search(pattern, text)
        if m:
            return int(m.group(1))
    m = re.search(r"allocate ([0-9.]+)\s*([KMGT]?i?B)\b", text, re.IGNORECASE)
    if m:
        unit = _UNITS.get(m.group(2).upper())
        if unit:
            return int(float(m.group(1)) * unit)
    return 0


def oom_device(text):
    for pattern in (r"device ordinal (\d+)", r"GPU_(\d+)_bfc", r"cuda:(\d+)"):
        m = re.search(pattern, text)
        if m:
            return int(m.group(1))
    return -1


def _error_class(jax):
    errors = getattr(jax, "errors", None)
    for name in ("JaxRuntimeError", "XlaRuntimeError"):
        cls = getattr(errors, name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            return cls
    return None


def watch_oom(jax, sampler):
    """Wraps the runtime error's __init__: XLA's RESOURCE_EXHAUSTED is seen where it is raised."""
    cls = _error_class(jax)
    if cls is None:
        return False
    original = cls.__init__
    busy = threading.local()

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if getattr(busy, "on", False):
            return
        try:
            text = str(args[0]) if args else ""
            if "RESOURCE_EXHAUSTED" in text or "Out of memory" in text:
                busy.on = True
                try:
                    sampler.on_oom(text)
                finally:
                    busy.on = False
        except Exception:  # inside the program's own error: never a second one
            pass

    cls.__init__ = __init__
    return True


def per_buffer_allocator_in_use():
    """"platform" or "address" when XLA_PYTHON_CLIENT_ALLOCATOR asks for a per-buffer allocator
    (set by the user, or by --jax per-buffer before JAX started), else ""."""
    name = os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "").lower()
    return name if name in ("platform", "address") else ""


def attach(jax):
    """Samples JAX's live arrays at the boundaries, at exit and at an OOM; False when it cannot.

    Under a per-buffer allocator (XLA_PYTHON_CLIENT_ALLOCATOR=platform or address) every buffer is
    its own CUDA allocation that the shim sees, but XLA may make it on a thread of its own, with no
    Python frame of the user's (a jitted step's outputs): the arrays are sampled at the boundaries
    too, and each one, placed at its buffer's address, gives that buffer the line that made it (the
    analysis's segment rule: the allocation holding an object is its container, the object the leak
    candidate). Not at exit (with no boundary, a buffer's own frames are all there is, and an exit
    sample would take their place) and not at an out-of-memory (a per-buffer allocation that fails
    is a CUDA call the shim sees)."""
    shim = _shim()
    if shim is None:
        return False
    if not hasattr(jax, "live_arrays"):
        if not per_buffer_allocator_in_use():  # per buffer, each buffer's own frames are still seen
            _warn("JAX arrays not seen (this jax has no live_arrays); the report shows the arena")
        return False
    import gpuleak

    sampler = Sampler(jax, shim)
    gpuleak._boundary_observers.append(sampler.on_boundary)
    version = getattr(jax, "__version__", "?")
    per_buffer = per_buffer_allocator_in_use()
    if per_buffer:
        what = "%s allocator, every buffer its own CUDA allocation; live arrays sampled at each iteration boundary " \
               "for the lines that made them" % per_buffer
    else:
        atexit.register(sampler.sample)  # after the program's own atexit handlers, before JAX's clean-up
        oom = watch_oom(jax, sampler)
        what = SAMPLED if oom else SAMPLED.replace(", at exit and at an out-of-memory", " and at exit")
    shim.attached(JAX, _text("jax %s %s" % (version, what))[:4000])
    return True


# --- gpuleak run --jax per-buffer ------------------------------------------------------------------
#
# Which XLA_PYTHON_CLIENT_ALLOCATOR names the installed JAX accepts, found without importing it (the
# choice must be made before JAX starts its backend) and without a GPU:
#   - older JAX reads the variable in Python (jax/_src/xla_bridge.py, the CUDA plugins' Python files)
#     and lists the names there;
#   - newer JAX (0.11.2 among them) hands it to the CUDA plugin as an option, and the plugin's C++
#     checks it: its shared library holds the list in its error text ("Supported allocator options
#     are: 'default', 'platform', 'bfc' and 'cuda_async'"). That text is found by the quoted
#     'platform' it holds; the quoted names of the same C string are the accepted ones.
# `address` (openxla/xla#44335) is the real pass-through and is preferred. `platform` frees the
# buffers of deleted arrays before JAX 0.10 only: since then it keeps them (jax-ml/jax#39145, seen on
# the H200 with JAX 0.11.2, tests/gpu/run_pools.sh), so it is no per-buffer view there.

_ALLOCATOR_NAMES = ("address", "platform", "bfc", "cuda_async", "default")
PLATFORM_KEEPS_FROM = (0, 10)  # the first JAX whose platform allocator keeps deleted buffers


def _package_dirs(name):
    import importlib.util
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return list(spec.submodule_search_locations)


def _python_sources(jax_dirs):
    import glob
    files = []
    for folder in jax_dirs:
        files.append(os.path.join(folder, "_src", "xla_bridge.py"))
        site = os.path.dirname(folder)
        files += sorted(glob.glob(os.path.join(site, "jax_plugins", "*", "*.py")))
        files += sorted(glob.glob(os.path.join(site, "jax_cuda*_plugin", "*.py")))
    return files


def _shared_libraries(jax_dirs):
    """jaxlib's and the CUDA plugins' shared libraries (where newer JAX reads the variable)."""
    import glob
    files = []
    for folder in _package_dirs("jaxlib"):
        files += glob.glob(os.path.join(folder, "*.so")) + glob.glob(os.path.join(folder, "*", "*.so"))
    for folder in jax_dirs:
        site = os.path.dirname(folder)
        for pattern in ("jax_plugins/*/*.so", "jax_plugins/*/*/*.so", "jax_cuda*_plugin/*.so",
                        "jax_cuda*_plugin/*/*.so"):
            files += glob.glob(os.path.join(site, pattern))
    return sorted(set(files))


def names_in_python(text):
    return {name for name in _ALLOCATOR_NAMES if re.search(r"['\"]%s['\"]" % name, text)}


def names_in_binary(data):
    """The allocator names a shared library's text lists: the quoted names of each C string that
    holds 'platform' quoted and speaks of an allocator. `data` is bytes or an mmap."""
    names = set()
    at = 0
    while True:
        hit = data.find(b"'platform'", at)
        if hit < 0:
            return names
        start = data.rfind(b"\0", max(0, hit - 4096), hit) + 1
        end = data.find(b"\0", hit, hit + 4096)
        text = bytes(data[start:end if end >= 0 else hit + 4096])
        if b"llocator" in text:
            names |= {n.decode() for n in re.findall(rb"'([a-z_]+)'", text) if n.decode() in _ALLOCATOR_NAMES}
        at = hit + 1


def _binary_names(path):
    import mmap
    try:
        with open(path, "rb") as f:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return names_in_binary(data)
    except (OSError, ValueError):
        return set()


def accepted_allocators():
    """The XLA_PYTHON_CLIENT_ALLOCATOR names the installed JAX accepts, from its Python sources and
    its shared libraries (nothing imported); None when none names an allocator."""
    jax_dirs = _package_dirs("jax")
    if not jax_dirs:
        return None
    names = set()
    for path in _python_sources(jax_dirs):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                names |= names_in_python(f.read())
        except OSError:
            continue
    for path in _shared_libraries(jax_dirs):
        names |= _binary_names(path)
    return names or None


def installed_version():
    """The installed JAX's version as a tuple of ints, read from jax/version.py; None when unknown."""
    for folder in _package_dirs("jax"):
        try:
            with open(os.path.join(folder, "version.py"), encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        m = re.search(r"^_version\s*(?::\s*str\s*)?=\s*['\"]([0-9]+(?:\.[0-9]+)*)", text, re.MULTILINE)
        if m:
            return tuple(int(x) for x in m.group(1).split("."))
    return None


def choose_allocator(names, version):
    """("address"|"platform", None), or (None, why) when the installed JAX offers neither a
    pass-through nor a platform allocator that frees."""
    shown = ".".join(str(x) for x in version) if version else "?"
    if names is not None and "address" in names:
        return "address", None
    platform_frees = version is None or tuple(version[:2]) < PLATFORM_KEEPS_FROM
    if names is not None and "platform" not in names:
        return None, "JAX %s accepts neither `address` nor `platform` for XLA_PYTHON_CLIENT_ALLOCATOR (it names %s)" % (
            shown, ", ".join(sorted(names)))
    if platform_frees:
        return "platform", None
    return None, ("JAX %s has no `address` allocator (openxla/xla#44335), and its `platform` allocator keeps the "
                  "buffers of deleted arrays (jax-ml/jax#39145)" % shown)


def per_buffer_allocator():
    """("address"|"platform", None), or (None, why) when the installed JAX offers neither."""
    return choose_allocator(accepted_allocators(), installed_version())


def install_per_buffer():
    """GPULEAK_JAX=per-buffer: sets XLA_PYTHON_CLIENT_ALLOCATOR before JAX starts its backend; when
    the installed JAX has no per-buffer allocator that frees, says so in one line and keeps the
    arena (its live arrays are sampled, as by default)."""
    name, why = per_buffer_allocator()
    if name is None:
        _warn("--jax per-buffer: %s; JAX keeps its arena (its live arrays are sampled)" % why)
        return None
    os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"] = name
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    return name
