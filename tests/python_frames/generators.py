"""Allocations inside generators: a plain generator driven by a for loop, and one reached through
`yield from` delegation. The generator's frame must chain to the frame that resumed it."""
import ctypes

from pyframes_common import cudart, done, expect

GEN_SIZE = (1 << 18) + 7
DELEGATE_SIZE = (1 << 18) + 9


def produce(n, size):
    for _ in range(n):
        p = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size))  # @gen_alloc
        yield p


def delegate(n, size):
    yield from produce(n, size)  # @delegate_yield_from


def consume():
    kept = []
    for p in produce(5, GEN_SIZE):  # @consume_loop
        kept.append(p)
    kept.extend(delegate(4, DELEGATE_SIZE))  # @consume_delegate
    return kept


kept = consume()  # @module_calls_consume

HERE = __file__
expect(GEN_SIZE, 5, frames=[
    ("produce", HERE, "gen_alloc"),
    ("consume", HERE, "consume_loop"),
    ("<module>", HERE, "module_calls_consume")])
expect(DELEGATE_SIZE, 4, frames=[
    ("produce", HERE, "gen_alloc"),
    ("delegate", HERE, "delegate_yield_from"),
    ("consume", HERE, "consume_delegate"),
    ("<module>", HERE, "module_calls_consume")])
done()
