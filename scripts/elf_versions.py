#!/usr/bin/env python3
"""The symbol versions ELF files need from glibc and the C++ runtime, read from the files themselves.

    scripts/elf_versions.py [--max-glibc 2.28] [--allow-needed NAME ...] FILE_OR_WHEEL...

For every ELF file given (or inside a given wheel or folder): each dynamic symbol that carries a
version it needs from another object (.gnu.version_r: GLIBC_2.17, GLIBCXX_3.4.29, CXXABI_1.3,
GCC_3.0, ...) and its DT_NEEDED entries. Prints one line per file with the newest GLIBC version
and the symbols that need it; with --max-glibc, exits 1 naming every symbol newer than that, and
any GLIBCXX/CXXABI/GCC version (the wheel links the C++ runtime statically: one would mean a
libstdc++.so dependency). Other libraries' versions (XZ_5.0: libunwind's liblzma) are left to
--allow-needed: a library allowed there is bundled or part of glibc. setup.py tags the wheel from the same reader (manylinux_2_N: N the
newest GLIBC minor found), and tests/packaging/wheel_test.sh checks the wheel with it.

A small ELF64 little-endian reader (the standard library only): section headers, .dynsym with
its string table, .gnu.version (versym) and .gnu.version_r (verneed). A file that is not ELF64 LE
is reported and fails the check.
"""

import argparse
import io
import os
import re
import struct
import sys
import zipfile

SHT_DYNSYM, SHT_DYNAMIC, SHT_GNU_VERNEED, SHT_GNU_VERSYM = 11, 6, 0x6FFFFFFE, 0x6FFFFFFF
DT_NEEDED = 1


class ElfError(Exception):
    pass


def _cstr(blob, offset):
    end = blob.find(b"\0", offset)
    return blob[offset:end if end >= 0 else len(blob)].decode("utf-8", "replace")


def read_versions(data):
    """(needed, [(symbol, version)]) for the ELF64 LE image `data`: DT_NEEDED names, and every
    dynamic symbol bound to a version needed from another object."""
    if data[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ElfError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shoff == 0 or shnum == 0 or shoff + shentsize * shnum > len(data):
        raise ElfError("no section headers")
    sections = []
    for i in range(shnum):
        _name, sh_type, _flags, _addr, offset, size, link, _info, _align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        sections.append((sh_type, offset, size, link, entsize))

    def body(index):
        _t, offset, size, _l, _e = sections[index]
        return data[offset:offset + size]

    dynsym = next((i for i, s in enumerate(sections) if s[0] == SHT_DYNSYM), None)
    versym = next((i for i, s in enumerate(sections) if s[0] == SHT_GNU_VERSYM), None)
    verneed = next((i for i, s in enumerate(sections) if s[0] == SHT_GNU_VERNEED), None)
    dynamic = next((i for i, s in enumerate(sections) if s[0] == SHT_DYNAMIC), None)
    needed = []
    if dynamic is not None:
        strings = body(sections[dynamic][3])
        blob = body(dynamic)
        for off in range(0, len(blob) - 15, 16):
            tag, value = struct.unpack_from("<qQ", blob, off)
            if tag == 0:
                break
            if tag == DT_NEEDED:
                needed.append(_cstr(strings, value))
    names = {}  # version index -> needed version name ("GLIBC_2.34")
    if verneed is not None:
        strings = body(sections[verneed][3])
        blob = body(verneed)
        off = 0
        while off + 16 <= len(blob):
            _version, count, _file, aux, nxt = struct.unpack_from("<HHIII", blob, off)
            a = off + aux
            for _ in range(count):
                if a + 16 > len(blob):
                    raise ElfError("a cut .gnu.version_r")
                _hash, _flags, other, name, anext = struct.unpack_from("<IHHII", blob, a)
                names[other] = _cstr(strings, name)
                if anext == 0:
                    break
                a += anext
            if nxt == 0:
                break
            off += nxt
    symbols = []
    if dynsym is not None and versym is not None:
        strings = body(sections[dynsym][3])
        syms, vers = body(dynsym), body(versym)
        for i in range(min(len(syms) // 24, len(vers) // 2)):
            (index,) = struct.unpack_from("<H", vers, 2 * i)
            version = names.get(index & 0x7FFF)
            if version is None:
                continue
            (name,) = struct.unpack_from("<I", syms, 24 * i)
            symbols.append((_cstr(strings, name), version))
    return needed, symbols


def cxx_runtime_version(version):
    """GLIBCXX_*, CXXABI_*, GCC_*: a dependency on the shared C++ runtime (libstdc++.so, libgcc_s)."""
    return re.match(r"(GLIBCXX|CXXABI|GCC)_", version) is not None


def glibc_version(version):
    """(2, 34) for "GLIBC_2.34", None for any other version name."""
    m = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def elf_files(path):
    """(name, bytes) of every ELF file in a wheel, a folder or a file."""
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as z:
            for name in sorted(z.namelist()):
                with z.open(name) as f:
                    head = f.read(4)
                if head == b"\x7fELF":
                    yield name, z.read(name)
    elif os.path.isdir(path):
        for root, _dirs, files in os.walk(path):
            for f in sorted(files):
                full = os.path.join(root, f)
                if os.path.isfile(full) and not os.path.islink(full):
                    with open(full, "rb") as h:
                        if h.read(4) == b"\x7fELF":
                            yield full, open(full, "rb").read()
    else:
        yield path, open(path, "rb").read()


def newest_glibc(paths):
    """The newest GLIBC version any ELF file under `paths` needs, (2, 17) when none needs more."""
    newest = (2, 17)
    for path in paths:
        for _name, data in elf_files(path):
            for _sym, version in read_versions(data)[1]:
                v = glibc_version(version)
                if v and v > newest:
                    newest = v
    return newest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--max-glibc", help="fail on any GLIBC version newer than this (2.28)")
    parser.add_argument("--allow-needed", action="append", default=None,
                        help="with --max-glibc: the only DT_NEEDED names allowed (repeat)")
    args = parser.parse_args(argv)
    limit = tuple(int(x) for x in args.max_glibc.split(".")) if args.max_glibc else None
    problems, count = [], 0
    for path in args.paths:
        for name, data in elf_files(path):
            count += 1
            try:
                needed, symbols = read_versions(data)
            except (ElfError, struct.error) as e:
                problems.append("%s: %s" % (name, e))
                continue
            glibc = [(glibc_version(v), s, v) for s, v in symbols if glibc_version(v)]
            newest = max((g[0] for g in glibc), default=(2, 17))
            at_newest = sorted({"%s@%s" % (s, v) for g, s, v in glibc if g == newest})
            others = sorted({"%s@%s" % (s, v) for s, v in symbols if cxx_runtime_version(v)})
            print("%s: GLIBC %d.%d (%s); %d versioned symbols; needs %s" % (
                name, newest[0], newest[1], ", ".join(at_newest[:6]) or "none", len(symbols),
                ", ".join(needed) or "nothing"))
            if limit is None:
                continue
            for g, s, v in sorted(glibc):
                if g > limit:
                    problems.append("%s: %s@%s is newer than GLIBC_%d.%d" % (name, s, v, limit[0], limit[1]))
            if others:
                problems.append("%s: needs %s (the C++ runtime must be linked statically)" % (name, ", ".join(others)))
            if args.allow_needed is not None:
                extra = [n for n in needed if n not in args.allow_needed]
                if extra:
                    problems.append("%s: DT_NEEDED %s beyond %s" % (name, ", ".join(extra), ", ".join(args.allow_needed)))
    if count == 0:
        problems.append("no ELF file in %s" % ", ".join(args.paths))
    for p in problems:
        print("FAIL: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
