"""Four threads allocating at the same time, each from its own function: every allocation must
carry its own thread's frames, never another's (the main thread allocates meanwhile too)."""
import ctypes
import threading

from pyframes_common import cudart, done, expect

ROUNDS = 150
SIZES = {"a": 4096 + 1, "b": 4096 + 2, "c": 4096 + 3, "d": 4096 + 4}
MAIN_SIZE = 4096 + 5
barrier = threading.Barrier(5)
kept = {name: [] for name in list(SIZES) + ["main"]}


def worker_a():
    barrier.wait()
    for _ in range(ROUNDS):
        p = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(SIZES["a"]))  # @a_alloc
        kept["a"].append(p)


def worker_b():
    barrier.wait()
    for _ in range(ROUNDS):
        p = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(SIZES["b"]))  # @b_alloc
        kept["b"].append(p)


def worker_c():
    barrier.wait()
    for _ in range(ROUNDS):
        p = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(SIZES["c"]))  # @c_alloc
        kept["c"].append(p)


def worker_d():
    barrier.wait()
    for _ in range(ROUNDS):
        p = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(SIZES["d"]))  # @d_alloc
        kept["d"].append(p)


def main():
    threads = [threading.Thread(target=f) for f in (worker_a, worker_b, worker_c, worker_d)]
    for t in threads:
        t.start()
    barrier.wait()
    for _ in range(ROUNDS):
        p = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(MAIN_SIZE))  # @main_alloc
        kept["main"].append(p)
    for t in threads:
        t.join()


main()  # @module_calls_main

HERE = __file__
for name in SIZES:
    expect(SIZES[name], ROUNDS, frames=[
        ("worker_" + name, HERE, name + "_alloc"),
        (("Thread.run", "run"), "threading.py", None)])
expect(MAIN_SIZE, ROUNDS, frames=[("main", HERE, "main_alloc"), ("<module>", HERE, "module_calls_main")])
done()
