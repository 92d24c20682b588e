#!/usr/bin/env python3
"""Random captures for a differential check of two gpuleak builds (docs/benchmarks.md).

usage: bench/random_captures.py OUT_DIR FIRST LAST

Writes OUT_DIR/irregular.N.gpuleak and OUT_DIR/loop.N.gpuleak for seeds N in [FIRST, LAST).
Irregular captures mix every op and kind at random (reused addresses, VMM maps from another
site, context resets, unmatched frees, failed allocations with OOM records, zero sizes, clock
steps back, several threads and devices; API marks, NVTX ranges or none). Loop-shaped ones are
training loops with perturbations (churn, release bursts, late frees, leaks, full devices).
Both deliver each thread's records in random chunks, as the recorder does. Then:

  bench/compare_reports.sh BASE_GPULEAK NEW_GPULEAK OUT_DIR/*.gpuleak
"""
import random
import struct
import sys


def rec(t, payload):
    return struct.pack('<IHH', len(payload), t, 0) + payload


def irregular(seed, path):
    R = random.Random(seed)
    out = bytearray(b'GPULEAK\0' + struct.pack('<HHIQQII', 1, 1, 40, 0, 1000, 1, 0))
    strings = {1: b'train', 2: b'eval', 3: b'step 1'}
    for i, s in strings.items(): out += rec(4, struct.pack('<II', i, len(s)) + s)
    ndev = R.choice([1, 1, 2])
    for d in range(ndev):
        name = b'fake'
        out += rec(9, struct.pack('<iIQ', d, len(name), R.choice([0, 1 << 30, 4 << 30])) + name)
    threads = [1, 2, 3][:R.choice([1, 2, 3])]
    per_thread = {t: [] for t in threads}
    clock = {t: 2000 for t in threads}
    mode = R.choice(['api', 'api', 'nvtx', 'none'])
    iters = R.randint(0, 40)
    live = []  # (addr, dev, kind)
    addr = 0x1000
    sites = list(range(1, R.randint(2, 12)))
    for s in sites + [100, 101]:
        out += rec(3, struct.pack('<IHH', s, 1, 0) + struct.pack('<Q', 0x400000 + s))
    markers, nvtx, ooms = [], [], []
    def mem(t, op, kind, address, size, dev, stack=0, result=0, aux=0, api=1, flags=0, dur=None):
        clock[t] += R.choice([0, 0, 1, 5, 100])
        ts = clock[t]
        if R.random() < 0.01: ts -= R.randint(1, 300)  # a clock step back
        per_thread[t].append(struct.pack('<QQQQQIIIIiHHBBhHH', ts, address, size, 0, aux,
                                         dur if dur is not None else R.randint(0, 300000), t, stack, 0, result,
                                         api, 0, op, kind, dev, flags, 0))
        return ts
    leak_site = R.choice(sites)
    for j in range(max(iters, 1)):
        t0 = threads[0]
        if mode == 'api' and iters:
            clock[t0] += 1; markers.append(struct.pack('<QII B7x', clock[t0], t0, 1, 1))
        if mode == 'nvtx' and iters:
            clock[t0] += 1; nvtx.append(struct.pack('<QQIIIB3x', clock[t0], 0, t0, 3, 0, 1))
        for _ in range(R.randint(1, 25)):
            t = R.choice(threads)
            dev = R.randrange(ndev)
            r = R.random()
            if r < 0.45 or not live:
                kind = R.choice([1, 1, 2, 3, 5, 6, 8, 10, 11])
                size = R.choice([0, 4096, 1 << 20, 2 << 20, 64 << 20, R.randint(1, 1 << 24)])
                a = R.choice([addr, addr, live[0][0] if live else addr])  # sometimes an address reused unfreed
                addr += 0x100000
                result = 2 if R.random() < 0.03 else 0
                flags = 1 if R.random() < 0.03 else 0
                ts = mem(t, 1, kind, a, size, dev, stack=R.choice(sites), result=result, flags=flags,
                         api=R.choice([1, 5, 11, 17]))
                if result == 2 and R.random() < 0.7:
                    ooms.append(struct.pack('<QQQQIIIiHhI', ts, size, R.choice([0, size * 2, size // 2]),
                                            8 << 30, t, R.choice(sites), 0, 2, 1, dev, 0))
                elif result == 0 and kind not in (10, 11) and not flags:
                    live.append((a, dev, kind))
                    if kind == 3 and R.random() < 0.8:  # map the handle, from another site
                        mem(t, 3, 3, 0x9000000 + a, size, dev, stack=R.choice(sites + [100, 101]), aux=a)
            elif r < 0.9:
                a, d, k = live.pop(R.randrange(len(live)) if R.random() < 0.5 else 0)
                mem(t, 2, R.choice([k, k, 0]), a, 0, R.choice([d, d, (d + 1) % ndev]), api=R.choice([3, 9, 12]),
                    dur=R.randint(0, 1000))
            elif r < 0.93:
                mem(t, 10, 0, 0, 0, dev)  # context reset
                live = [l for l in live if l[1] != dev]
            elif r < 0.96:
                mem(t, 2, 1, 0xdead0000 + R.randint(0, 9), 0, dev)  # unmatched
            else:
                mem(t, R.choice([4, 5, 6, 7]), 0, 0x5000, 0, dev)
        if R.random() < 0.6:  # a leak
            mem(t0, 1, 1, addr, 1 << 16, 0, stack=leak_site); addr += 0x100000
        if R.random() < 0.5 and live:  # free a burst at the iteration's end
            for _ in range(R.randint(0, min(len(live), 6))):
                a, d, k = live.pop(0)
                mem(t0, 2, k, a, 0, d, api=3)
        if mode == 'api' and iters:
            clock[t0] += 1; markers.append(struct.pack('<QII B7x', clock[t0], t0, 0, 2))
        if mode == 'nvtx' and iters:
            clock[t0] += 1; nvtx.append(struct.pack('<QQIIIB3x', clock[t0], 0, t0, 0, 0, 2))
    # per-thread chunks, interleaved
    pos = {t: 0 for t in threads}
    while any(pos[t] < len(per_thread[t]) for t in threads):
        t = R.choice(threads)
        n = R.randint(1, 40)
        for p in per_thread[t][pos[t]:pos[t] + n]: out += rec(5, p)
        pos[t] += n
    for m in markers: out += rec(7, m)
    for n in nvtx: out += rec(6, n)
    for o in ooms: out += rec(8, o)
    open(path, 'wb').write(bytes(out))


def loop_shaped(seed, path):
    R = random.Random(seed)
    out = bytearray(b'GPULEAK\0' + struct.pack('<HHIQQII', 1, 1, 40, 0, 1000, 1, 0))
    out += rec(4, struct.pack('<II', 1, 5) + b'train')
    total = R.choice([0, 600 << 20, 1 << 30])
    out += rec(9, struct.pack('<iIQ', 0, 4, total) + b'fake')
    nsites = R.randint(3, 10)
    for s in range(1, nsites + 3):
        out += rec(3, struct.pack('<IHH', s, 1, 0) + struct.pack('<Q', 0x400000 + s))
    sizes = {s: R.choice([0, 4096, 1 << 20, 8 << 20, 64 << 20]) for s in range(1, nsites + 1)}
    kinds = {s: R.choice([1, 1, 2, 5]) for s in range(1, nsites + 1)}
    threads = [1, 2][:R.choice([1, 2])]
    streams = {t: [] for t in threads}
    clock = [5000]
    markers = []
    addr = [0x10000]
    def mem(t, op, kind, a, size, stack=0, api=1, dur=None, vmm_map=False):
        clock[0] += R.choice([1, 1, 2, 10])
        streams[t].append(struct.pack('<QQQQQIIIIiHHBBhHH', clock[0], a, size, 0, 0,
                                      dur if dur is not None else R.randint(0, 200000), t, stack, 0, 0,
                                      api, 0, op, kind, 0, 0, 0))
    def alloc(t, s):
        a = addr[0]; addr[0] += 0x100000
        mem(t, 1, kinds[s], a, sizes[s], stack=s, api=R.choice([1, 5]))
        return (a, s)
    def free(t, x, api=3):
        mem(t, 2, kinds[x[1]], x[0], 0, api=api, dur=R.randint(0, 50000))
    iters = R.randint(6, 60)
    persistent = [alloc(1, 1)]
    prev_double = []
    cached = []
    for j in range(iters):
        clock[0] += 1; markers.append(struct.pack('<QII B7x', clock[0], 1, 1, 1))
        temps = []
        for s in range(2, nsites + 1):
            if R.random() < 0.05: continue
            t = R.choice(threads)
            x = alloc(t, s)
            if s % 3 == 0: temps.append(x)         # freed in the end burst
            elif s % 3 == 1: free(t, x)            # churn
            else: prev_double.append(x)            # late: freed next iteration
        if R.random() < 0.9:
            for x in [y for y in prev_double if y[0] < addr[0] - 0x100000 * nsites]:
                free(1, x); prev_double.remove(x)
        if R.random() < 0.3: persistent.append(alloc(1, nsites + 1 if nsites + 1 in sizes else 1))  # a leak
        if R.random() < 0.8:
            for x in temps: free(1, x, api=3)  # burst
        else:
            cached += temps
        if cached and R.random() < 0.2:
            for x in cached: free(1, x)
            cached = []
        clock[0] += 1; markers.append(struct.pack('<QII B7x', clock[0], 1, 0, 2))
    pos = {t: 0 for t in threads}
    while any(pos[t] < len(streams[t]) for t in threads):
        t = R.choice(threads); n = R.randint(1, 30)
        for p in streams[t][pos[t]:pos[t] + n]: out += rec(5, p)
        pos[t] += n
    for m in markers: out += rec(7, m)
    open(path, 'wb').write(bytes(out))


if __name__ == '__main__':
    out_dir, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for i in range(first, last):
        irregular(i, f'{out_dir}/irregular.{i}.gpuleak')
        loop_shaped(i, f'{out_dir}/loop.{i}.gpuleak')
