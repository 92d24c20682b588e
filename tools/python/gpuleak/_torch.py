"""Per-tensor call sites inside PyTorch's default caching allocator (issue #14), with no allocator
switch: right after `import torch`, gpuleak's start-up hook (gpuleak._hooks) attaches the adapter
library built from src/torch_adapter/trace_tracker.cpp to the allocator's trace tracker, and every
block the allocator hands out or takes back reaches the shim with its call site.

The adapter is compiled against the installed torch's own headers (torch/include), once per torch
version, and cached:
    $GPULEAK_CACHE_DIR, else $XDG_CACHE_HOME/gpuleak, else ~/.cache/gpuleak
        torch-<torch version>-<key>/libgpuleak_torch.so
so its use of PyTorch's C++ classes is checked by the compiler against the very version that runs
it. GPULEAK_TORCH_ADAPTER=PATH uses a library built beforehand (it must have been built against
this torch version); `python -m gpuleak.torch_adapter` builds it ahead of time (an image's build
step, where the compiler is), and a cached adapter needs neither compiler nor headers at run time.
Anything that stops it (no C++ compiler, no torch or CUDA headers, a torch whose headers have no
tracker, a non-native allocator) goes into the capture (gpuleak_api_pool_missing, format 1.8) and
the summary's note says it with what is lost; the report keeps the segment view of the caching
allocator. Without the shim (no capture to tell), it is one line on stderr.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_SOURCE_NAME = "trace_tracker.cpp"
PYTORCH = 1  # the framework number of gpuleak_api_pool_missing (src/format/capture_format.h)


def _warn(message):
    sys.stderr.write("gpuleak: " + message + "\n")


def _record_missing(why):
    """Why the tensors are not seen, into the capture for the summary's note; False without a shim."""
    import ctypes
    try:
        fn = ctypes.CDLL(None).gpuleak_api_pool_missing
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p]
    fn.restype = None
    fn(PYTORCH, why.encode("utf-8", "replace"))
    return True


def not_seen(why):
    """Said whenever the tensors cannot be seen: why, in the capture (the summary's note adds what is
    lost), or in one line on stderr when no shim records."""
    if not _record_missing(why):
        _warn("PyTorch tensors not seen (%s); the report shows the caching allocator's segments" % why)


def adapter_source():
    """The adapter's source: the wheel's or install's copy, else the checkout's; None when absent."""
    candidates = [os.environ.get("GPULEAK_TORCH_ADAPTER_SRC", ""),
                  _HERE / "_native" / "share" / "gpuleak" / "torch_adapter" / _SOURCE_NAME,
                  _HERE.parents[2] / "src" / "torch_adapter" / _SOURCE_NAME]
    try:
        from . import _layout  # a CMake install: share/gpuleak relative to this folder
        share = getattr(_layout, "SHARE", None)
        if share:
            candidates.insert(2, (_HERE / share / "torch_adapter" / _SOURCE_NAME).resolve())
    except ImportError:
        pass
    for c in candidates:
        if c and Path(c).is_file():
            return Path(c)
    return None


def _cuda_include(torch_dir):
    """A folder with cuda_runtime_api.h (the c10/cuda headers include it): CUDA_HOME, the toolkit, or
    the NVIDIA runtime wheels next to torch."""
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    site = torch_dir.parent
    dirs = [Path(r) / "include" for r in roots if r]
    dirs += [site / "nvidia" / "cu13" / "include", site / "nvidia" / "cuda_runtime" / "include"]
    for d in dirs:
        if (d / "cuda_runtime_api.h").is_file():
            return d
    return None


def _cache_root():
    if os.environ.get("GPULEAK_CACHE_DIR"):
        return Path(os.environ["GPULEAK_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpuleak"


def compiler():
    """The C++ compiler the adapter is built with: $CXX, else c++ or g++ on PATH; None without."""
    return os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")


NO_COMPILER = ("no C++ compiler to build the PyTorch adapter (c++, g++ or $CXX): install one (apt-get install "
               "g++), or build the adapter once where there is one (python -m gpuleak.torch_adapter)")


def cache_target(torch, source):
    """Where the adapter for this torch is cached (it need not exist)."""
    torch_dir = Path(torch.__file__).resolve().parent
    abi = int(bool(getattr(getattr(torch, "_C", None), "_GLIBCXX_USE_CXX11_ABI", True)))
    key = hashlib.sha256(b"|".join([source.read_bytes(), torch.__version__.encode(), str(abi).encode(),
                                    str(torch_dir / "include").encode()]))
    folder = _cache_root() / ("torch-%s-%s" % (torch.__version__.replace("/", "_"), key.hexdigest()[:16]))
    return folder / "libgpuleak_torch.so"


def _build(torch, source, target=None):
    """The cached adapter for this torch (or `target`), built when missing. Returns (path, None) or
    (None, why). A cached one is used without a compiler or headers (gpuleak.torch_adapter)."""
    torch_dir = Path(torch.__file__).resolve().parent
    include, lib = torch_dir / "include", torch_dir / "lib"
    abi = int(bool(getattr(getattr(torch, "_C", None), "_GLIBCXX_USE_CXX11_ABI", True)))
    target = Path(target) if target else cache_target(torch, source)
    folder = target.parent
    if target.is_file():
        return target, None
    if not (include / "c10" / "cuda" / "CUDACachingAllocator.h").is_file():
        return None, ("torch %s ships no C++ headers (%s): the PyTorch adapter cannot be built against it"
                      % (torch.__version__, include))
    cuda_include = _cuda_include(torch_dir)
    if cuda_include is None:
        return None, ("no CUDA headers (cuda_runtime_api.h) for the PyTorch adapter in $CUDA_HOME, /usr/local/cuda "
                      "or the nvidia wheels beside torch: set CUDA_HOME to a CUDA toolkit")
    cxx = compiler()
    if not cxx:
        return None, NO_COMPILER
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=str(folder))
    os.close(fd)
    cmd = [cxx, "-std=c++17", "-O2", "-fPIC", "-shared", "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi,
           "-isystem", str(include), "-isystem", str(cuda_include), str(source), "-o", tmp,
           "-L" + str(lib), "-lc10_cuda", "-lc10", "-Wl,-rpath," + str(lib)]
    started = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        os.unlink(tmp)
        return None, "building the adapter failed (%s)" % e
    if p.returncode != 0:
        os.unlink(tmp)
        first = next((ln for ln in p.stderr.splitlines() if "error" in ln), p.stderr.strip()[:200])
        return None, "torch %s's headers do not fit the adapter (%s)" % (torch.__version__, first.strip()[:200])
    os.replace(tmp, target)  # atomic: a concurrent run sees the old state or the whole library
    if os.environ.get("GPULEAK_LOG"):
        _warn("built the PyTorch adapter for torch %s in %.1f s: %s" % (torch.__version__,
                                                                       time.monotonic() - started, target))
    return target, None


def attach(torch):
    """Builds (or finds) the adapter for the imported `torch` and attaches it to the caching
    allocator: at once when CUDA is initialized already, else right after torch.cuda._lazy_init
    (also the build: a program that imports torch and never uses CUDA pays nothing)
    (the allocator's per-device parts exist only from then on; initializing CUDA ourselves would
    change the program, e.g. break fork()ed data-loader workers). False when it cannot be used
    now; True when it is attached or will be at CUDA's initialization."""
    cuda = getattr(torch, "cuda", None)
    if cuda is None or cuda.is_initialized() or not hasattr(cuda, "_lazy_init"):
        fn = _load(torch)
        return fn is not None and _attach_now(torch, fn)
    original = cuda._lazy_init

    def _lazy_init():
        original()  # raises without a GPU: then nothing is attached, and the next call tries again
        if cuda._lazy_init is _lazy_init:
            cuda._lazy_init = original
            # Built (or found in the cache) only now: a program that never uses CUDA pays nothing.
            try:
                fn = _load(torch)
                if fn is not None:
                    _attach_now(torch, fn)
            except Exception as e:  # inside the program's first CUDA call: never its problem
                not_seen("%s: %s" % (type(e).__name__, e))

    cuda._lazy_init = _lazy_init  # torch.cuda's own calls and the C++ lazy init look it up by name
    return True


def _attach_now(torch, fn):
    import ctypes
    buf = ctypes.create_string_buffer(512)
    try:
        ok = fn(torch.__version__.encode(), buf, len(buf))
    except Exception as e:  # never the program's problem
        not_seen("%s: %s" % (type(e).__name__, e))
        return False
    if not ok:
        reason = buf.value.decode(errors="replace")
        if "not the caching allocator" not in reason:  # per-tensor mode: nothing is hidden
            not_seen(reason)
        return False
    return True


def _load(torch):
    """The adapter's gpuleak_torch_attach, or None (said in one line)."""
    import ctypes
    explicit = os.environ.get("GPULEAK_TORCH_ADAPTER", "")
    if explicit:
        path, why = Path(explicit), None
        if not path.is_file():
            path, why = None, "GPULEAK_TORCH_ADAPTER=%s is no file" % explicit
    else:
        source = adapter_source()
        path, why = (None, "the adapter's source is missing") if source is None else _build(torch, source)
    if path is None:
        not_seen(why)
        return None
    try:
        # libc10_cuda.so is loaded already (by torch._C), local to it: the adapter binds to that copy.
        lib = ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        fn = lib.gpuleak_torch_attach
        fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        fn.restype = ctypes.c_int
    except (OSError, AttributeError) as e:
        not_seen("loading %s failed: %s" % (path, e))
        return None
    return fn
