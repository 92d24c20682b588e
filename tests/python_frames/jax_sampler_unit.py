#!/usr/bin/env python3
"""JAX's live-array sampler (tools/python/gpuleak/_jax.py, Sampler) against stand-in arrays and a
recording shim, no JAX and no GPU: where each kind of array is placed (one device through its
sharding, looked up once per sharding object; the buffer's on-device size where the array has
it, read once per aval object of a sharding; several shards, no sharding attribute, a host array, a deleted array), what a sample sends
(the new arrays, then those gone; an id reused by a new array), and a fork while another thread
samples. Exit 0 pass,
1 fail."""
import os
import signal
import sys
import threading
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "python"))
from gpuleak import _jax  # noqa: E402


class Device:
    def __init__(self, ordinal, platform="gpu"):
        self.id = self.local_hardware_id = ordinal
        self.platform = platform


class Sharding:
    reads = 0

    def __init__(self, *devices):
        self._devices = set(devices)

    @property
    def device_set(self):
        Sharding.reads += 1
        return self._devices


class Shard:
    def __init__(self, device, data):
        self.device, self.data = device, data


class Array:
    """jaxlib's array as the sampler sees it: nbytes is the logical size, the buffer may be larger."""

    size_reads = 0

    def __init__(self, address, nbytes, sharding=None, device_bytes=None, shards=None, aval=None):
        self.address, self.nbytes, self.deleted = address, nbytes, False
        if sharding is not None:
            self.sharding = sharding
        if device_bytes is not None:
            def on_device_size_in_bytes():
                Array.size_reads += 1
                return device_bytes
            self.on_device_size_in_bytes = on_device_size_in_bytes
        if aval is not None:
            self.aval = aval
        self.shards = shards
        self.traceback = None

    def unsafe_buffer_pointer(self):
        if self.deleted or self.shards:
            raise ValueError("deleted" if self.deleted else "several shards")
        return self.address

    def is_deleted(self):
        return self.deleted

    def devices(self):
        return {s.device for s in self.shards} if self.shards else set(self.sharding._devices)

    @property
    def addressable_shards(self):
        return self.shards


class Jax:
    def __init__(self):
        self.arrays = []

    def live_arrays(self):
        return list(self.arrays)


class Shim:
    def __init__(self):
        self.words = []

    def objects(self, words):
        self.words.append(list(words))


def check(ok, what):
    if not ok:
        print("FAIL: " + what)
        sys.exit(1)


def main():
    gpu0, gpu1, cpu = Device(0), Device(1), Device(0, "cpu")
    one = Sharding(gpu1)
    sampler = _jax.Sampler(Jax(), Shim())
    sampler.device_sizes = True
    new1, gone1 = _jax.NEW | 1 << 8, _jax.GONE | 1 << 8
    new0, gone0 = _jax.NEW, _jax.GONE
    a, b = Array(0x1000, 100, one, device_bytes=128), Array(0x2000, 200, one, device_bytes=256)
    check(sampler._place(a) == ((new1, 0x1000, 128, 0), (gone1, 0x1000, 0, 0)),
          "one device: the sharding's device, the on-device size")
    check(sampler._place(b) == ((new1, 0x2000, 256, 0), (gone1, 0x2000, 0, 0)) and Sharding.reads == 1,
          "a second array of the same sharding object: its device set read once (%d reads)" % Sharding.reads)
    # The size kept per aval object within a sharding: a jitted call's outputs share both.
    shape_a, shape_b = object(), object()
    Array.size_reads = 0
    c, d = Array(0x8000, 100, one, device_bytes=512, aval=shape_a), Array(0x9000, 100, one, device_bytes=512, aval=shape_a)
    e = Array(0xa000, 100, one, device_bytes=1024, aval=shape_b)
    check([sampler._place(x)[0][2] for x in (c, d, e)] == [512, 512, 1024] and Array.size_reads == 2,
          "one on-device size read per aval object (%d reads)" % Array.size_reads)
    f = Array(0xb000, 100, Sharding(gpu1), device_bytes=2048, aval=shape_a)
    check(sampler._place(f)[0][2] == 2048 and Array.size_reads == 3, "another sharding object: its own sizes")
    b.deleted = True
    check(sampler._place(b) is None, "a deleted array: nothing placed")
    check(sampler._place(Array(0x3000, 64, Sharding(cpu), device_bytes=64)) is None, "a host array: nothing placed")
    two = Array(0, 0, Sharding(gpu0, gpu1), shards=[Shard(gpu0, Array(0x4000, 32)), Shard(gpu1, Array(0x5000, 32))])
    check(sampler._place(two) == ((new0, 0x4000, 32, 0, new1, 0x5000, 32, 0), (gone0, 0x4000, 0, 0, gone1, 0x5000, 0, 0)),
          "two shards: one buffer each")
    bare = Array(0x6000, 48, one)
    del bare.sharding
    bare.shards = None
    bare.devices = lambda: {gpu0}
    check(sampler._place(bare) == ((new0, 0x6000, 48, 0), (gone0, 0x6000, 0, 0)),
          "no sharding attribute: devices() and nbytes")

    # A sample: the arrays new since the last, then those gone (first in the words), each once.
    jax, shim = Jax(), Shim()
    sampler = _jax.Sampler(jax, shim)
    jax.arrays = [Array(0x1000, 100, one), Array(0x2000, 200, one)]  # no on_device_size_in_bytes: nbytes
    sampler.sample()
    check(sampler.device_sizes is False, "arrays without on_device_size_in_bytes: nbytes")
    new = _jax.NEW | 1 << 8
    check(shim.words == [[new, 0x1000, 100, 0, new, 0x2000, 200, 0]], "the first sample: two new arrays %r" % shim.words)
    kept = jax.arrays[1]
    jax.arrays = [kept, Array(0x3000, 300, one)]
    sampler.sample()
    check(shim.words[1] == [_jax.GONE | 1 << 8, 0x1000, 0, 0, new, 0x3000, 300, 0],
          "the second sample: the gone array first, then the new one: %r" % shim.words[1])
    sampler.sample()
    check(len(shim.words) == 2, "a sample with nothing new or gone sends nothing")
    # An array gone and another at its id (CPython reuses a freed object's memory): the one seen
    # before is reported gone, the new one new, though the id is the same.
    reused = Array(0x7000, 700, one)
    sampler.seen[_jax._identity(reused)] = sampler.seen.pop(_jax._identity(kept))
    jax.arrays = [reused, jax.arrays[1]]
    sampler.sample()
    check(shim.words[2] == [_jax.GONE | 1 << 8, 0x2000, 0, 0, new, 0x7000, 700, 0],
          "an id reused by a new array: the old one gone, the new one new: %r" % shim.words[2])

    # A fork while another thread samples: the child samples with a lock of its own.
    holding, release = threading.Event(), threading.Event()

    def hold():
        with sampler.lock:
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(30)
    with warnings.catch_warnings():  # 3.12 warns of fork() in a threaded process: that is the case
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        signal.alarm(10)  # a child stuck on the parent's lock dies here, and the check below fails
        sampler.sample()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    release.set()
    holder.join()
    check(os.waitstatus_to_exitcode(status) == 0,
          "a child forked while another thread held the sampler's lock could not sample (status %d)" % status)
    print("ok: JAX sampler placements and samples")


if __name__ == "__main__":
    main()
