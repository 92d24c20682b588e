#!/usr/bin/env python3
"""The benchmark generator's capture says what it was built to say (a small one, fast).

  check_gen_capture.py GEN_CAPTURE GPULEAK TMPDIR

Generates 20,000 events over 100 steps from 20 sites, analyzes them with `gpuleak report --json`,
and checks the four leaks gen_capture.cpp plants (by their stacks' first return address,
0x400000 + site * 0x1000), their rates and first iterations, and that nothing else leaks.
"""
import json
import os
import subprocess
import sys


def main():
    gen, cli, tmp = sys.argv[1:4]
    capture = os.path.join(tmp, "gen_small.gpuleak")
    if os.path.exists(capture):
        os.unlink(capture)
    subprocess.run([gen, capture, "20000", "100", "20"], check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run([cli, "report", "--json", capture], check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    expect(r["verdict"] == "leak", f"verdict {r['verdict']}")
    expect(r["iteration_source"] == "api", f"iteration source {r['iteration_source']}")
    expect(r["analysis"]["primary_iterations"] == 100, f"{r['analysis']['primary_iterations']} iterations")
    expect(19000 <= r["run"]["capture"]["events"] <= 20000, f"{r['run']['capture']['events']} events")
    expect(r["analysis"]["unmatched_frees"] == 0, "unmatched frees")
    by_site = {}
    for leak in r["leaks"]:
        site = (int(leak["stack"][0]["address"], 16) - 0x400000) // 0x1000
        by_site[site] = leak
    expect(sorted(by_site) == [1, 2, 3, 4], f"leaking sites {sorted(by_site)}")
    want = {1: (1 << 20, 0), 2: ((256 << 10) / 3, None), 3: (64 << 10, 50), 4: (4 << 10, 0)}
    for site, (rate, first) in want.items():
        leak = by_site.get(site)
        if not leak:
            continue
        got = leak["bytes_per_iteration"]
        expect(abs(got - rate) <= 0.05 * rate, f"site {site}: {got} bytes per iteration, expected ~{rate:.0f}")
        if first is not None:
            expect(leak["first_iteration"] == first, f"site {site}: first iteration {leak['first_iteration']}")
    for f in failures:
        print("FAIL:", f)
    print("gen_capture check:", "ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
