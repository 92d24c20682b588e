"""The gpuleak wheel: the native profiler (CLI, shim, viewer) inside the Python package.

    pip wheel --no-build-isolation --no-deps -w dist .

Only Debian's python3-setuptools and python3-wheel are needed (scikit-build-core is not packaged
for Debian 12): the build step runs CMake on this checkout (tests and benchmarks off, a CLI that
needs nothing beyond glibc) and lays the result out as a prefix inside the package,

    gpuleak/_native/bin/gpuleak                   the command line
    gpuleak/_native/lib/libgpuleak.so             the shim, found by the CLI as ../lib
    gpuleak/_native/lib/libunwind.so.8, liblzma.so.5   the shim's unwinder (dlopened via $ORIGIN)
    gpuleak/_native/share/gpuleak/viewer.html     the viewer template, ../share/gpuleak
    gpuleak/_native/share/gpuleak/torch_adapter/trace_tracker.cpp   the PyTorch adapter's source (gpuleak._torch)

so the CLI finds its shim and template exactly as in a build tree or a CMake install. The `gpuleak`
console command and `python -m gpuleak` exec that CLI (gpuleak/__main__.py).

The binaries are linked against Debian 11's glibc 2.31 (scripts/glibc-sysroot.sh lays the sysroot
out from Debian's registry, once; cmake/GpuleakSysrootToolchain.cmake uses it), the few symbols
GCC 12's static runtime takes from newer glibc provided by src/compat, and the libraries bundled
are Debian 11's too. The wheel is tagged py3-none-manylinux_2_N_x86_64, N the newest GLIBC_2.N
version any bundled ELF file needs (scripts/elf_versions.py reads them), checked after the build
along with their DT_NEEDED entries (nothing outside glibc and the bundled files).

Environment: CMAKE_ARGS (extra configure arguments, e.g. a compiler launcher),
CMAKE_BUILD_PARALLEL_LEVEL (CMake's own), GPULEAK_CUDA_ROOT (the CUDA headers the shim compiles
against; only headers are needed), GPULEAK_CMAKE_BUILD_DIR (the CMake tree; default
build-wheel/temp.*/cmake; the packaging tests share one with scripts/build-deb.sh),
GPULEAK_SYSROOT (a glibc sysroot folder; `none` links against this machine's glibc, and the tag
follows it).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "scripts"))
import elf_versions  # noqa: E402  (scripts/elf_versions.py: the ELF reader the tag comes from)

sys.path.pop(0)


def _bdist_wheel():
    """setuptools' own bdist_wheel (70.1 and later), else the `wheel` package's, else Debian's
    python3-wheel (pure Python) borrowed from /usr/lib/python3/dist-packages for another CPython."""
    try:
        from setuptools.command.bdist_wheel import bdist_wheel as command
        return command
    except ImportError:
        pass
    try:
        from wheel.bdist_wheel import bdist_wheel as command
        return command
    except ImportError:
        pass
    debian = "/usr/lib/python3/dist-packages"
    if os.path.isfile(os.path.join(debian, "wheel", "bdist_wheel.py")):
        sys.path.append(debian)
        try:
            from wheel.bdist_wheel import bdist_wheel as command
            return command
        except ImportError:
            pass
        finally:
            sys.path.remove(debian)
    raise SystemExit("gpuleak wheel: %s has neither setuptools >= 70.1 nor the `wheel` package "
                     "(apt-get install python3-wheel, or pip install wheel)" % sys.executable)


bdist_wheel = _bdist_wheel()

# glibc's own libraries: what every Linux has. Anything else the binaries need must be bundled.
GLIBC_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "ld-linux-x86-64.so.2"}
# The shim dlopens libunwind.so.8 (src/core/stack_capture.cpp) and falls back to the slower
# _Unwind_Backtrace without it; libunwind needs liblzma for compressed debug info.
BUNDLED = ["libunwind.so.8", "liblzma.so.5"]


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(gpuleak VERSION (\d+\.\d+\.\d+)", text).group(1)


def glibc_sysroot():
    """The sysroot to link against: GPULEAK_SYSROOT, else the one scripts/glibc-sysroot.sh lays
    out (fetched once from Debian's registry); None for this machine's glibc, said in one line."""
    given = os.environ.get("GPULEAK_SYSROOT", "")
    if given == "none":
        return None
    if given:
        if not (Path(given) / "usr/include/stdio.h").is_file():
            raise SystemExit("gpuleak wheel: GPULEAK_SYSROOT=%s is no glibc sysroot (scripts/glibc-sysroot.sh)" % given)
        return Path(given).resolve()
    p = subprocess.run([str(ROOT / "scripts/glibc-sysroot.sh")], capture_output=True, text=True)
    if p.returncode != 0:
        print("gpuleak wheel: no glibc sysroot (%s): linking against this machine's glibc, so the wheel's tag "
              "follows it" % (p.stderr.strip().splitlines() or ["scripts/glibc-sysroot.sh failed"])[-1])
        return None
    return Path(p.stdout.strip().splitlines()[-1])


def forget_other_toolchain(cmake_dir, sysroot):
    """A CMake tree configured for another sysroot (or none) cannot switch compilers in place."""
    cache = cmake_dir / "CMakeCache.txt"
    if not cache.is_file():
        return
    m = re.search(r"^GPULEAK_SYSROOT:\w+=(.*)$", cache.read_text(), re.M)
    if (m.group(1) if m else "") != (str(sysroot) if sysroot else ""):
        cache.unlink()
        shutil.rmtree(cmake_dir / "CMakeFiles", ignore_errors=True)


def system_library(soname, sysroot=None):
    if sysroot is not None:  # the sysroot's copy: built against its glibc
        for d in ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu"):
            if (sysroot / d / soname).exists():
                return (sysroot / d / soname).resolve()
        raise SystemExit("gpuleak wheel: %s not in the sysroot %s (scripts/glibc-sysroot.sh)" % (soname, sysroot))
    out = subprocess.run(["ldconfig", "-p"], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == soname and "x86-64" in line:
            return Path(parts[-1]).resolve()
    raise SystemExit("gpuleak wheel: %s not found on this machine (scripts/install-deps.sh)" % soname)


def elf_facts(path):
    """(DT_NEEDED entries, the newest GLIBC_x.y version needed, the C++ runtime versions needed)."""
    needed, symbols = elf_versions.read_versions(Path(path).read_bytes())
    glibc = max([v for v in (elf_versions.glibc_version(s[1]) for s in symbols) if v], default=(2, 17))
    others = sorted({v for _s, v in symbols if elf_versions.cxx_runtime_version(v)})
    return needed, glibc, others


class build_native(build_py):
    """build_py, then the CMake build of the CLI and the shim into gpuleak/_native."""

    def run(self):
        super().run()
        native = Path(self.build_lib) / "gpuleak" / "_native"
        cmake_dir = Path(os.environ.get("GPULEAK_CMAKE_BUILD_DIR") or
                         Path(self.get_finalized_command("build").build_temp) / "cmake").resolve()
        # RelWithDebInfo: the flags the test suite runs with (and ccache's hits from a dev build);
        # the debug info is stripped from the copies below.
        configure = ["cmake", "-S", str(ROOT), "-B", str(cmake_dir), "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                     "-DGPULEAK_BUILD_TESTS=OFF", "-DGPULEAK_BUILD_BENCH=OFF", "-DGPULEAK_PORTABLE_CLI=ON",
                     "-DGPULEAK_INSTALL_SHIMDIR=lib"]
        sysroot = glibc_sysroot()
        forget_other_toolchain(cmake_dir, sysroot)
        if sysroot is not None:
            configure += ["-DCMAKE_TOOLCHAIN_FILE=" + str(ROOT / "cmake/GpuleakSysrootToolchain.cmake"),
                          "-DGPULEAK_SYSROOT=" + str(sysroot)]
        if os.environ.get("GPULEAK_CUDA_ROOT"):
            configure.append("-DGPULEAK_CUDA_ROOT=" + os.environ["GPULEAK_CUDA_ROOT"])
        configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        self.spawn(configure)
        self.spawn(["cmake", "--build", str(cmake_dir), "--target", "gpuleak", "gpuleak_cli",
                    "gpuleak_viewer_template"])
        if native.exists():
            shutil.rmtree(native)
        for sub, name in (("bin", "gpuleak"), ("lib", "libgpuleak.so"), ("share/gpuleak", "viewer.html")):
            (native / sub).mkdir(parents=True, exist_ok=True)
            shutil.copy2(cmake_dir / sub / name, native / sub / name)
        # The PyTorch adapter's source, compiled at run time against the installed torch (gpuleak._torch).
        (native / "share/gpuleak/torch_adapter").mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "src/torch_adapter/trace_tracker.cpp", native / "share/gpuleak/torch_adapter")
        for soname in BUNDLED:
            shutil.copy2(system_library(soname, sysroot), native / "lib" / soname)
        # libunwind finds the bundled liblzma beside itself; the shim's RUNPATH is already $ORIGIN.
        self.spawn(["patchelf", "--set-rpath", "$ORIGIN", str(native / "lib" / "libunwind.so.8")])
        for f in [native / "bin" / "gpuleak"] + sorted((native / "lib").iterdir()):
            self.spawn(["strip", "--strip-debug", str(f)])
        self.distribution.gpuleak_glibc = self.check_portable(native)

    def check_portable(self, native):
        """The newest glibc the binaries need; fails the build on any other dependency."""
        newest = (2, 17)
        allowed = GLIBC_LIBS | set(BUNDLED) | {"libgpuleak.so"}
        for f in [native / "bin" / "gpuleak"] + sorted((native / "lib").iterdir()):
            needed, glibc, others = elf_facts(f)
            extra = [n for n in needed if n not in allowed]
            if extra or others:
                raise SystemExit("gpuleak wheel: %s needs %s beyond glibc (GPULEAK_PORTABLE_CLI?)"
                                 % (f.name, ", ".join(extra + others)))
            newest = max(newest, glibc)
        print("gpuleak wheel: binaries need glibc %d.%d and nothing else" % newest)
        return newest


class bdist_native_wheel(bdist_wheel):
    """Any CPython 3 (no extension module), this architecture, the glibc measured above."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        major, minor = getattr(self.distribution, "gpuleak_glibc", None) or (2, 39)
        return "py3", "none", "manylinux_%d_%d_x86_64" % (major, minor)


class NativeDistribution(Distribution):
    def has_ext_modules(self):
        return True  # platlib, not purelib: the package carries executables


(ROOT / "build-wheel").mkdir(exist_ok=True)
setup(
    version=project_version(),
    distclass=NativeDistribution,
    cmdclass={"build_py": build_native, "bdist_wheel": bdist_native_wheel},
    # Out of the way of the CMake build tree (./build) and of tools/python.
    options={"build": {"build_base": str(ROOT / "build-wheel")}, "egg_info": {"egg_base": str(ROOT / "build-wheel")}},
)
