"""A stand-in for PyTorch for the retention-path tests (issue #30): tensors whose storage has a data
pointer, and an autograd graph held the way PyTorch's C++ holds it, out of the garbage
collector's sight (gc.get_referents of a tensor or a node shows none of it).

Memory: with PYFRAMES_CUDART set (the fake CUDA under the shim), storages are blocks inside 64 MiB
segments from cudaMalloc, reported to gpuleak as PyTorch's adapter does (gpuleak_api_pool_block);
without it, addresses are made up. torch.cuda.set_limit(n) makes an allocation past n live bytes
raise torch.cuda.OutOfMemoryError, as PyTorch's caching allocator does.

A tensor's memory is freed when the last tensor sharing it dies (detach(), saved tensors)."""
import ctypes
import os
import types

_incref = ctypes.pythonapi.Py_IncRef
_decref = ctypes.pythonapi.Py_DecRef
_incref.argtypes = _decref.argtypes = [ctypes.py_object]


def _hold(obj):
    """A reference the garbage collector cannot see (as a C++ pointer): the object's address."""
    if obj is None:
        return 0
    _incref(obj)
    return id(obj)


def _get(address):
    return ctypes.cast(address, ctypes.py_object).value if address else None


def _drop(address):
    if address:
        _decref(_get(address))


class OutOfMemoryError(RuntimeError):
    pass


class _Memory:
    SEGMENT = 64 << 20

    def __init__(self):
        path = os.environ.get("PYFRAMES_CUDART")
        self.cudart = ctypes.CDLL(path) if path else None
        if self.cudart is not None:
            api = ctypes.CDLL(None)
            self.block = api.gpuleak_api_pool_block
            self.block.restype = ctypes.c_int
            self.block.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_ulonglong, ctypes.c_ulonglong,
                                   ctypes.c_ulonglong, ctypes.c_int]
            api.gpuleak_api_pool_attached.argtypes = [ctypes.c_int, ctypes.c_char_p]
            api.gpuleak_api_pool_attached(1, b"fake torch (tests/python_frames) caching allocator trace")
        self.segment, self.top, self.next = 0, self.SEGMENT, 0x7F0000000000
        self.cached = {}
        self.shares = {}  # address -> tensors sharing it
        self.live, self.limit = 0, None

    def allocate(self, nbytes):
        if self.limit is not None and self.live + nbytes > self.limit:
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes" % nbytes)
        self.live += nbytes
        free = self.cached.get(nbytes)
        if free:
            address = free.pop()
        elif self.cudart is None:
            address, self.next = self.next, self.next + ((nbytes + 511) // 512) * 512
        else:
            if self.top + nbytes > self.SEGMENT:
                p = ctypes.c_void_p()
                if self.cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(self.SEGMENT)) != 0:
                    raise OutOfMemoryError("cudaMalloc failed")
                self.segment, self.top = p.value, 0
            address = self.segment + self.top
            self.top += ((nbytes + 511) // 512) * 512
        if self.cudart is not None:
            self.block(1, 0, address, nbytes, 0, 1)
        self.shares[address] = 0
        return address

    def share(self, address):
        self.shares[address] += 1

    def release(self, address, nbytes):
        self.shares[address] -= 1
        if self.shares[address] > 0:
            return
        del self.shares[address]
        self.live -= nbytes
        if self.cudart is not None:
            self.block(2, 0, address, 0, 0, 1)
        self.cached.setdefault(nbytes, []).append(address)


_memory = _Memory()


class UntypedStorage:
    """What tensor.untyped_storage() returns: a new object each call, like PyTorch's."""

    def __init__(self, address, nbytes):
        self._address, self._nbytes = address, nbytes
        self.is_cuda = True

    def data_ptr(self):
        return self._address

    def nbytes(self):
        return self._nbytes


class Tensor:
    is_cuda = True

    _address = None  # until allocated (an allocation that raised leaves none)
    _grad_fn = 0

    def __init__(self, nbytes, _address=None, _grad_fn=None):
        self._nbytes = nbytes
        self._address = _memory.allocate(nbytes) if _address is None else _address
        _memory.share(self._address)
        self._grad_fn = _hold(_grad_fn)

    def untyped_storage(self):
        return UntypedStorage(self._address, self._nbytes)

    @property
    def grad_fn(self):
        return _get(self._grad_fn)

    grad = None

    def detach(self):
        return Tensor(self._nbytes, self._address)

    def __del__(self):
        _drop(self._grad_fn)
        if self._address is not None:
            _memory.release(self._address, self._nbytes)


class Parameter(Tensor):
    pass


class _Node:
    """An autograd node: its edges are C++ pointers in PyTorch, here references held by address."""

    def __init__(self, next_nodes, saved):
        self._next = tuple(_hold(n) for n in next_nodes)
        self._saved = {name: _hold(t) for name, t in saved.items()}

    @property
    def next_functions(self):
        return tuple((_get(a), 0) for a in self._next)

    def __del__(self):
        for a in self._next:
            _drop(a)
        for a in self._saved.values():
            _drop(a)


_node_types = {}


def _node_type(name, saved_names):
    key = (name, tuple(sorted(saved_names)))
    cls = _node_types.get(key)
    if cls is None:
        attrs = {"_saved_" + s: property(lambda self, s=s: _get(self._saved[s])) for s in saved_names}
        cls = _node_types[key] = type(name, (_Node,), attrs)
    return cls


def empty(nbytes):
    return Tensor(nbytes)


def op(name, nbytes, inputs=(), saved=None):
    """The result of an op recorded for backward: its grad_fn `name` has the inputs' grad_fns as
    next functions and keeps `saved` ({name: tensor}, as saved-for-backward copies)."""
    saved = {k: Tensor(t._nbytes, t._address) for k, t in (saved or {}).items()}
    node = _node_type(name, saved)([t.grad_fn for t in inputs if t.grad_fn is not None], saved)
    return Tensor(nbytes, _grad_fn=node)


def _set_limit(nbytes):
    _memory.limit = nbytes


cuda = types.ModuleType("torch.cuda")
cuda.OutOfMemoryError = OutOfMemoryError
cuda.set_limit = _set_limit
cuda.live_bytes = lambda: _memory.live
# What gpuleak's PyTorch adapter hook looks at (gpuleak._torch.attach): CUDA not initialized yet,
# and a lazy init it waits for, which this stand-in never runs (its blocks are reported above).
cuda.is_initialized = lambda: False
cuda._lazy_init = lambda: None
