"""build.unity_readers: every file of each reader library compiles as one translation unit, as
the Demo build type's unity batches compile them (GPULEAK_UNITY_READERS, docs/benchmarks.md "The
demo's build"). Two files of one library that define the same name at namespace scope (in an
anonymous namespace too) build fine one file at a time and fail only in a batch; this finds them
from the one-file-per-object build the test suite uses, with -fsyntax-only (no code generated).
    unity_readers_test.py <build dir> <target>..."""
import json
import os
import shlex
import subprocess
import sys
import tempfile

build, targets = sys.argv[1], sys.argv[2:]
with open(os.path.join(build, "compile_commands.json")) as f:
    entries = json.load(f)


def target_of(entry):
    """The CMake target whose object this entry compiles: <...>/CMakeFiles/<target>.dir/<...>."""
    args = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
    out = args[args.index("-o") + 1]
    parts = out.split("/")
    for i, p in enumerate(parts[:-1]):
        if p == "CMakeFiles" and parts[i + 1].endswith(".dir"):
            return parts[i + 1][: -len(".dir")], args
    return None, args


by_target = {}
for e in entries:
    name, args = target_of(e)
    if name in targets:
        by_target.setdefault(name, []).append((os.path.join(e["directory"], e["file"]), args, e["directory"]))

failed = []
for name in targets:
    files = [f for f in by_target.get(name, []) if f[0].endswith((".cpp", ".cc", ".cxx"))]
    if not files:
        print(f"{name}: no C++ files in compile_commands.json")
        failed.append(name)
        continue
    if any("/Unity/unity_" in f[0] for f in files):
        print(f"{name}: already a unity build here (its build is the check)")
        continue
    # The library's flags (the file, -c and -o dropped). A file with flags of its own (a source
    # property: core/python_observer.cpp's definitions) is left out, as CMake leaves it out of
    # the batches.
    def flags(entry):
        path, args, _ = entry
        i = args.index("-o")
        return tuple(a for a in args[:i] + args[i + 2:] if a != "-c" and not a.endswith(os.path.basename(path)))

    common = max(set(map(flags, files)), key=lambda k: sum(flags(f) == k for f in files))
    files = [f for f in files if flags(f) == common]
    args = list(common)
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as unit:
        for path, _, _ in files:
            unit.write(f'#include "{path}"\n')
    r = subprocess.run(args + ["-fsyntax-only", "-Wno-subobject-linkage", unit.name], cwd=files[0][2],
                       capture_output=True, text=True)
    os.unlink(unit.name)
    if r.returncode != 0:
        errors = [line for line in r.stderr.splitlines() if ": error:" in line]
        print(f"{name}: its {len(files)} files do not compile as one:\n  " + "\n  ".join(errors[:10]))
        failed.append(name)
    else:
        print(f"{name}: {len(files)} files compile as one")
sys.exit(1 if failed else 0)
