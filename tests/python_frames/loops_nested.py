"""Loops, nested functions and a class method: a training-style loop that leaks two allocations
per step (Model.forward and outer.<locals>.inner) and frees a third, plus a plain loop at one line."""
import ctypes

from pyframes_common import cudart, done, expect, free, iteration_begin, iteration_end, qual

STEPS = 24
FORWARD_SIZE = (1 << 20) + 11
INNER_SIZE = (1 << 20) + 23
LOOP_SIZE = (1 << 16) + 5
TEMP_SIZE = 4 << 20


class Model:
    def forward(self, n):
        p = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n))  # @forward_alloc
        return p


def outer(n):
    def inner(k):
        p = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(k))  # @inner_alloc
        return p
    return inner(n)  # @outer_calls_inner


def train(steps):
    model = Model()
    kept = []
    for step in range(steps):
        iteration_begin()
        tmp = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(tmp), ctypes.c_size_t(TEMP_SIZE))
        kept.append(model.forward(FORWARD_SIZE))  # @train_calls_forward
        kept.append(outer(INNER_SIZE))  # @train_calls_outer
        free(tmp)
        iteration_end()
    for i in range(3):
        p = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(LOOP_SIZE))  # @loop_alloc
        kept.append(p)
    return kept


kept = train(STEPS)  # @module_calls_train

HERE = __file__
expect(FORWARD_SIZE, STEPS, leak=True, frames=[
    (qual("Model.forward"), HERE, "forward_alloc"),
    ("train", HERE, "train_calls_forward"),
    ("<module>", HERE, "module_calls_train")])
expect(INNER_SIZE, STEPS, leak=True, frames=[
    (qual("outer.<locals>.inner"), HERE, "inner_alloc"),
    ("outer", HERE, "outer_calls_inner"),
    ("train", HERE, "train_calls_outer"),
    ("<module>", HERE, "module_calls_train")])
expect(LOOP_SIZE, 3, frames=[
    ("train", HERE, "loop_alloc"),
    ("<module>", HERE, "module_calls_train")])
done()
