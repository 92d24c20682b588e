"""One list of hooked symbols: src/shim/hooks.def's rows are every entry point gpuleak wraps, and
the build generates the rest from them (the handlers' declarations, the exported functions, the
cuGetProcAddress table, and the version script gpuleak.map from gpuleak.map.in). This checks the
end of that chain: the built libgpuleak.so exports exactly the rows' CUDA symbols, nothing more
and nothing less (a stale or mis-generated version script, a row whose export lost its default
visibility, a cu* symbol exported from elsewhere).

usage: hook_list_check.py SOURCE_DIR LIBGPULEAK_SO"""
import re
import subprocess
import sys


def rows(text, macro):
    """The first argument of each X(...) row of `#define macro(X)`."""
    m = re.search(r"^#define " + macro + r"\(X\)(.*?)(?:^\s*$|^#|^//)", text, re.M | re.S)
    if not m:
        sys.exit(f"FAIL: no {macro} in hooks.def")
    return re.findall(r"\bX\((\w+)[,)]", m.group(1))


def main():
    src, lib = sys.argv[1], sys.argv[2]
    with open(src + "/src/shim/hooks.def", encoding="utf-8") as f:
        text = f.read()
    driver, runtime = rows(text, "GPULEAK_DRIVER_HOOKS"), rows(text, "GPULEAK_RUNTIME_HOOKS")
    cupti = rows(text, "GPULEAK_CUPTI_HOOKS")
    if len(driver) < 20 or len(runtime) < 10 or not cupti:
        sys.exit(f"FAIL: only {len(driver)} driver, {len(runtime)} runtime and {len(cupti)} CUPTI rows parsed from "
                 "hooks.def")
    every = driver + runtime + cupti
    listed = set(every)
    problems = [f"{n}: listed twice in hooks.def" for n in sorted(listed) if every.count(n) > 1]

    nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1].split("@")[0] for line in nm.splitlines() if line.split()}
    cuda = {s for s in exported if s.startswith("cu")}  # cuMem..., cuda..., cupti...
    for s in sorted(cuda - listed):
        problems.append(f"{s}: exported by {lib} but not a hooks.def row")
    for s in sorted(listed - cuda):
        problems.append(f"{s}: a hooks.def row that {lib} does not export")

    if problems:
        sys.exit("FAIL:\n  " + "\n  ".join(problems))
    print(f"ok: {lib} exports exactly hooks.def's {len(driver)} driver, {len(runtime)} runtime and {len(cupti)} "
          "CUPTI symbols")


if __name__ == "__main__":
    main()
