"""CuPy's default memory pool seen per array (issue #27), with no allocator switch: right after
`import cupy`, gpuleak's start-up hook (gpuleak._hooks) sets CuPy's allocator to a
cupy.cuda.PythonFunctionAllocator whose malloc is the default MemoryPool's own, so the program
keeps its pool (the same reuse, the same cudaMalloc chunks), and every array the pool hands out or
takes back reaches the shim as a pool block (gpuleak_api_pool_block, framework 2): the allocation
on the allocating thread, whose Python frames the shim reads at the call; the free on whatever
thread drops the array's last reference (the report pairs it by address). The pool's own cudaMalloc
chunks stay the segment level: the report lists which arrays live in which chunk.

Why the allocator and not cupy.cuda.MemoryHook: CuPy keeps its hooks per thread, so a hook misses
the arrays of other threads and the frees made on them (false leaks); set_allocator is global
(research/POOLS-AND-LOOPS.md 1.2, 1.4).

What the program does with its allocator later is seen and said (in the report's pool_tracker):
cupy.cuda.set_allocator(MemoryAsyncPool().malloc) (each array a cudaMallocAsync, seen by the shim
itself), set_allocator(None) (each array a cudaMalloc), another MemoryPool (wrapped like the
default one), or a function of its own (only its CUDA calls are seen). A thread's
cupy.cuda.using_allocator block is that thread's own choice and not seen.
"""

import ctypes
import sys

CUPY = 2  # the framework number of gpuleak_api_pool_block (include/gpuleak/gpuleak.h)


def _warn(message):
    sys.stderr.write("gpuleak: " + message + "\n")


def _shim():
    """(block32, pool_attached) from the preloaded shim, or None without it.
    block32(op, device, address_high, address_low, size_high, size_low, framework) tells the shim
    of one array: every argument a C int, passed with no argtypes, so that ctypes makes no
    converter object per argument (half the cost of a call, src/shim/c_api.cpp)."""
    try:
        process = ctypes.CDLL(None)
        attached = process.gpuleak_api_pool_attached
    except (OSError, AttributeError):
        return None
    attached.argtypes = [ctypes.c_int, ctypes.c_char_p]
    attached.restype = None
    try:
        return process.gpuleak_api_pool_block32, attached
    except AttributeError:  # an older shim: the 64-bit call, the halves joined again
        pass
    try:
        block = process.gpuleak_api_pool_block
    except AttributeError:
        return None
    block.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_ulonglong, ctypes.c_ulonglong, ctypes.c_ulonglong,
                      ctypes.c_int]
    block.restype = ctypes.c_int

    def block32(op, device, address_high, address_low, size_high, size_low, framework):
        return block(op, device, address_high << 32 | address_low, size_high << 32 | size_low, 0, framework)

    return block32, attached


def wrap_pool(cuda, pool, block32):
    """A PythonFunctionAllocator's malloc that takes every array from `pool` and tells the shim."""
    live = {}  # address -> the pool's MemoryPointer: the block stays the program's until freed
    pool_malloc = pool.malloc

    def malloc(size, device_id):
        memory = pool_malloc(size)
        address = memory.ptr
        live[address] = memory
        block32(1, device_id, address >> 32, address & 0xFFFFFFFF, size >> 32, size & 0xFFFFFFFF, CUPY)
        return address

    def free(address, device_id):
        # Said before the block goes back to the pool: another thread may be handed it next.
        block32(2, device_id, address >> 32, address & 0xFFFFFFFF, 0, 0, CUPY)
        live.pop(address, None)

    allocator = cuda.PythonFunctionAllocator(malloc, free)
    return allocator.malloc


def describe(cupy, allocator):
    """What an allocator the program set means for what gpuleak sees."""
    owner = getattr(allocator, "__self__", None)
    cuda = cupy.cuda
    if allocator is None:
        return "no pool (cupy.cuda.set_allocator(None)): each array is its own cudaMalloc, seen by the shim"
    async_pool = getattr(cuda, "MemoryAsyncPool", None)
    if async_pool is not None and isinstance(owner, async_pool):
        return ("MemoryAsyncPool (stream-ordered, cudaMallocAsync per array): each array is seen by the shim "
                "as its own allocation")
    name = getattr(allocator, "__qualname__", None) or type(allocator).__name__
    return "the program's own allocator %s: only its CUDA calls are seen, not its arrays" % name


class Attachment:
    """The installed wrapper and what the program did with the allocator since."""

    def __init__(self, cupy, shim):
        self.cupy = cupy
        self.block, self.attached = shim
        self.ours = ()
        version = getattr(cupy, "__version__", "?")
        self.prefix = "cupy %s" % version

    def say(self, text):
        self.attached(CUPY, ("%s %s" % (self.prefix, text)).encode("utf-8", "backslashreplace")[:4000])

    def install(self):
        cuda = self.cupy.cuda
        pool = self.cupy.get_default_memory_pool()
        malloc = wrap_pool(cuda, pool, self.block)
        cuda.set_allocator(malloc)
        self.ours = (malloc,)
        self.say("default MemoryPool, every array seen through its allocator (set_allocator wrapper)")
        original = cuda.set_allocator

        def set_allocator(allocator=None):
            owner = getattr(allocator, "__self__", None)
            memory_pool = getattr(cuda, "MemoryPool", None)
            if memory_pool is not None and isinstance(owner, memory_pool) and allocator == owner.malloc:
                wrapped = wrap_pool(cuda, owner, self.block)
                original(wrapped)
                self.ours = self.ours + (wrapped,)
                self.say("a MemoryPool the program set, every array seen through its allocator")
                return
            original(allocator)
            if allocator not in self.ours:
                self.say(describe(self.cupy, allocator))

        set_allocator.__doc__ = getattr(original, "__doc__", None)
        cuda.set_allocator = set_allocator


def attach(cupy):
    """Installs the per-array view of CuPy's default pool; False (said in one line) when it cannot."""
    shim = _shim()
    if shim is None:
        return False  # no shim in this process: nothing to report to
    cuda = getattr(cupy, "cuda", None)
    if cuda is None or not hasattr(cuda, "PythonFunctionAllocator") or not hasattr(cupy, "get_default_memory_pool"):
        _warn("CuPy arrays not seen (this cupy has no PythonFunctionAllocator); the report shows the pool's chunks")
        return False
    try:
        Attachment(cupy, shim).install()
    except Exception as e:  # never the program's problem
        _warn("CuPy arrays not seen (%s: %s); the report shows the pool's chunks" % (type(e).__name__, e))
        return False
    return True
