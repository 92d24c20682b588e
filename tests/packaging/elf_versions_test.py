"""packaging.elf_versions: the reader that tags the wheel and checks its symbol versions
(scripts/elf_versions.py) against binutils, and its --max-glibc gate against a library made to
need a newer glibc than the limit.
    elf_versions_test.py <source dir> <build dir>"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

src, build = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, "scripts"))
import elf_versions  # noqa: E402

if not shutil.which("objdump") or not shutil.which("cc"):
    print("SKIPPED: needs objdump and cc (binutils, gcc)")
    sys.exit(77)


def objdump_versions(path):
    """(symbol, version) of objdump -T's lines that carry a needed version (not a defined one)."""
    out = subprocess.run(["objdump", "-T", path], check=True, capture_output=True, text=True).stdout
    pairs = set()
    for line in out.splitlines():
        m = re.search(r"\s(?:\(([^)]+)\)|([A-Z][A-Z0-9_]*_[\d.]+))\s+(\S+)$", line)
        if m and " *UND*" in line:
            pairs.add((m.group(3), m.group(1) or m.group(2)))
    return pairs


files = ["/bin/true", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", os.path.join(build, "lib", "libgpuleak.so"),
         os.path.join(build, "bin", "gpuleak")]
checked = 0
for f in files:
    if not os.path.isfile(f):
        continue
    data = open(f, "rb").read()
    needed, symbols = elf_versions.read_versions(data)
    theirs = objdump_versions(f)
    # Ours also has the defined ones that still need a version (copy-relocated data: stdout@GLIBC_2.2.5).
    undefined = {(s, v) for s, v in symbols if (s, v) in theirs}
    assert theirs == undefined, "%s: objdump %s, ours %s" % (f, sorted(theirs - undefined)[:5],
                                                            sorted(undefined - theirs)[:5])
    assert "libc.so.6" in needed, (f, needed)
    checked += 1
    print("%s: %d versioned symbols, as objdump reads them" % (f, len(theirs)))
assert checked >= 2, "nothing to compare"

# A library that needs gettid (glibc 2.30) and memcpy at its oldest version: the gate names gettid.
work = tempfile.mkdtemp()
try:
    c = os.path.join(work, "needs.c")
    with open(c, "w") as h:
        h.write('#define _GNU_SOURCE\n#include <string.h>\n#include <unistd.h>\n'
                '__asm__(".symver memcpy, memcpy@GLIBC_2.2.5");\n'
                'int f(char *d, const char *s) { memcpy(d, s, 4); return gettid(); }\n')
    so = os.path.join(work, "libneeds.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-fno-builtin", c, "-o", so], check=True)
    _needed, symbols = elf_versions.read_versions(open(so, "rb").read())
    assert ("gettid", "GLIBC_2.30") in symbols and ("memcpy", "GLIBC_2.2.5") in symbols, symbols
    assert elf_versions.newest_glibc([work]) == (2, 30)
    p = subprocess.run([sys.executable, os.path.join(src, "scripts", "elf_versions.py"), "--max-glibc", "2.28", so],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "gettid@GLIBC_2.30 is newer than GLIBC_2.28" in p.stderr, (p.returncode, p.stderr)
    assert "memcpy" not in p.stderr, p.stderr
    p = subprocess.run([sys.executable, os.path.join(src, "scripts", "elf_versions.py"), "--max-glibc", "2.30", so],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # Not ELF at all: refused, never passed.
    junk = os.path.join(work, "junk")
    open(junk, "wb").write(b"\x7fELF\x01\x01junk")
    p = subprocess.run([sys.executable, os.path.join(src, "scripts", "elf_versions.py"), "--max-glibc", "2.28", junk],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "not a 64-bit" in p.stderr, p.stderr
finally:
    shutil.rmtree(work)
print("PASS")
