"""One list of hooked symbols: src/shim/hook_table.h's X-macro rows are the driver entry points
gpuleak wraps. This checks that the other places that name them agree with it:
driver_exports.cpp defines exactly the table's export names, driver_handlers.h declares every
handler the table names, and the built libgpuleak.so exports (through gpuleak.map's cu*/cuda*
globs) exactly the table's driver symbols plus runtime_labels.cpp's cudart functions, nothing
more and nothing less.

usage: hook_list_check.py SOURCE_DIR LIBGPULEAK_SO"""
import re
import subprocess
import sys


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def main():
    src, lib = sys.argv[1], sys.argv[2]
    table = read(src + "/src/shim/hook_table.h")
    rows = re.findall(r"^\s*X\((\w+),\s*\"\w+\",[^)]*,\s*(\w+)\)", table, re.M)
    if len(rows) < 20:
        sys.exit(f"FAIL: only {len(rows)} rows parsed from hook_table.h")
    names = {name for name, _ in rows}
    handlers = {handler for _, handler in rows}
    problems = []

    exports = set(re.findall(r"GPULEAK_API\s+CUresult\s+(\w+)\(", read(src + "/src/shim/driver_exports.cpp")))
    for n in sorted(names - exports):
        problems.append(f"{n}: a hook_table.h row without a definition in driver_exports.cpp")
    for n in sorted(exports - names):
        problems.append(f"{n}: defined in driver_exports.cpp but not a hook_table.h row")

    declared = set(re.findall(r"\b(on_\w+)\(", read(src + "/src/shim/driver_handlers.h")))
    for h in sorted(handlers - declared):
        problems.append(f"{h}: a handler named in hook_table.h but not declared in driver_handlers.h")

    runtime = set(re.findall(r"GPULEAK_API\s+cudaError_t\s+(\w+)\(", read(src + "/src/shim/runtime_labels.cpp")))
    if not runtime:
        problems.append("no cudart function parsed from runtime_labels.cpp")

    nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1].split("@")[0] for line in nm.splitlines() if line.split()}
    cuda = {s for s in exported if re.match(r"cu[A-Z]|cuda", s)}
    for s in sorted(cuda - names - runtime):
        problems.append(f"{s}: exported by {lib} but neither a hook_table.h row nor a runtime_labels.cpp function")
    for s in sorted((names | runtime) - cuda):
        problems.append(f"{s}: listed but not exported by {lib} (gpuleak.map)")

    if problems:
        sys.exit("FAIL:\n  " + "\n  ".join(problems))
    print(f"ok: {len(names)} driver hooks, {len(runtime)} runtime functions agree across the table, "
          "the exports, the handlers and the library")


if __name__ == "__main__":
    main()
