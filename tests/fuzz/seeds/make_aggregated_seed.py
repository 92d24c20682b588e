#!/usr/bin/env python3
"""Writes a small capture in format 1.4 with raw records and aggregated windows
(AggregateSite 15, AggregateWindow 16), the capture fuzzer's seed for the aggregated form.
usage: make_aggregated_seed.py OUT"""
import struct
import sys


def record(rtype, payload):
    return struct.pack("<IHH", len(payload), rtype, 0) + payload


def memory(ts, address, size, op, stack=1, tid=7):
    # ts, address, size, stream, aux, duration, tid, stack_id, py_stack_id, result, api, runtime_api,
    # op, kind (1 device), device, flags, reserved
    return record(5, struct.pack("<QQQQQIIIIiHHBBhHH", ts, address, size, 0, 0, 0, tid, stack, 0, 0, 1, 0, op, 1,
                                 0, 0, 0))


def marker(ts, op, label=1, tid=7):
    return record(7, struct.pack("<QII B7x", ts, tid, label if op == 1 else 0, op))


def site(alloc_bytes, freed_bytes, allocs, frees, stack, birth):
    return record(15, struct.pack("<QQIIIIIhBB", alloc_bytes, freed_bytes, allocs, frees, stack, 0, birth, 0, 1, 0))


def window(start, first_begin, it_end, last_begin, end, events, number, iterations, flags):
    return record(16, struct.pack("<QQQQQQQIIIIII", start, first_begin, it_end, last_begin, end, events, 0, number,
                                  iterations, 1, 7, flags, 0))


out = bytearray(b"GPULEAK\0" + struct.pack("<HHIQQII", 1, 4, 40, 1_000_000_000, 1_000, 7, 0))
out += record(4, struct.pack("<II", 1, 5) + b"train")
out += record(3, struct.pack("<IHH", 1, 2, 0) + struct.pack("<QQ", 0x401000, 0x402000))
out += record(3, struct.pack("<IHH", 2, 1, 0) + struct.pack("<Q", 0x403000))
t = 10_000
for i in range(4):  # raw iterations: a leak of 64 bytes and a pair per step
    out += marker(t, 1)
    out += memory(t + 1, 0x10000 + i * 0x100, 64, 1, stack=1)
    out += memory(t + 2, 0x90000, 4096, 1, stack=2)
    out += memory(t + 3, 0x90000, 4096, 2, stack=2)
    out += marker(t + 10, 2)
    t += 20
out += memory(t + 1, 0x10000, 64, 2, stack=1)  # a raw allocation's free after the switch stays raw
out += site(64 * 3, 0, 3, 0, 1, 1) + site(4096 * 3, 4096 * 3, 3, 3, 2, 1)
out += window(t, t + 2, t + 60, 0, t + 60, 9, 1, 3, 0)
t += 60
out += site(64 * 2, 64, 2, 1, 1, 2) + site(0, 64, 0, 1, 1, 1) + site(4096, 4096, 1, 1, 2, 2)
out += window(t, t + 1, t + 40, t + 41, t + 50, 6, 2, 2, 2)
out += record(10, struct.pack("<QQQQQQII", 20, 0, 2, 0, 0, 0, 0, 1))
with open(sys.argv[1], "wb") as f:
    f.write(out)
