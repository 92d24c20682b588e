"""`gpuleak run --jax per-buffer` (tools/python/gpuleak/_jax.py): which XLA_PYTHON_CLIENT_ALLOCATOR
the installed JAX accepts, found without importing it and without a GPU, against installed trees
built here as the real ones are laid out:

  old      JAX 0.4.30: xla_bridge.py lists the names in Python; `platform` still frees -> platform;
  plugin   JAX 0.11.2: Python names none, the CUDA plugin's shared library holds the C++ check's
           error text without `address`; `platform` keeps deleted buffers (jax-ml/jax#39145) ->
           neither: one stderr line, XLA_PYTHON_CLIENT_ALLOCATOR left unset;
  address  the same with `address` in the text (openxla/xla#44335) -> address;
  jaxlib   the text in jaxlib's own extension (jaxlib/_jax.so) -> address;
  none     nothing names an allocator, JAX 0.11.2 -> neither;
  absent   no JAX installed -> platform (JAX's documented per-buffer allocator; nothing to check).

Exit 0 pass, 1 fail (the reasons on stderr)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "..", "tools", "python")
sys.path.insert(0, PACKAGE)
from gpuleak import _jax  # noqa: E402

# As XLA's PJRT GPU plugin words it (xla/pjrt/c/pjrt_c_api_gpu_internal.cc), in .rodata between
# other C strings; `'platform'` also appears in unrelated strings, which must not count.
CHECK = (b"Allocator %s not supported for PJRT GPU plugin. Supported allocator options are: "
         b"'default', 'platform', 'bfc' and 'cuda_async'.")
WITH_ADDRESS = CHECK.replace(b"'bfc'", b"'bfc', 'address'")
NOISE = b"\x7fELF\x02\x01\x01\0" + b"\0" * 64 + b"device kind 'platform' unknown\0xla::Shape\0"

failures = []


def check(what, got, want):
    if got != want:
        failures.append("%s: got %r, want %r" % (what, got, want))


def tree(root, case):
    site = os.path.join(root, case, "site-packages")
    jax = os.path.join(site, "jax")
    os.makedirs(os.path.join(jax, "_src"))
    version = "0.4.30" if case == "old" else "0.11.2"
    files = {os.path.join(jax, "__init__.py"): b"raise ImportError('never imported by the detection')\n",
             os.path.join(jax, "version.py"): b'_version: str = "%s"\n' % version.encode(),
             os.path.join(jax, "_src", "xla_bridge.py"): b"import os\n"}
    if case == "old":
        files[os.path.join(jax, "_src", "xla_bridge.py")] = (
            b"allocator = os.getenv('XLA_PYTHON_CLIENT_ALLOCATOR', 'default').lower()\n"
            b"if allocator not in ('default', 'platform', 'bfc', 'cuda_async'):\n    raise ValueError(allocator)\n")
    plugin = os.path.join(site, "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
    if case == "plugin":
        files[plugin] = NOISE + CHECK + b"\0more\0"
    elif case == "address":
        files[plugin] = NOISE + WITH_ADDRESS + b"\0"
    elif case == "jaxlib":
        files[os.path.join(site, "jaxlib", "_jax.so")] = NOISE + WITH_ADDRESS + b"\0"
        files[os.path.join(site, "jaxlib", "__init__.py")] = b""
    elif case == "none":
        files[plugin] = NOISE
    for path, data in files.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    return site


def run_hook(site):
    """GPULEAK_JAX=per-buffer's start-up step in a fresh interpreter over that tree: the allocator
    chosen, the environment it left, and what it said on stderr."""
    code = ("import json, os, sys\nfrom gpuleak import _jax, _hooks\n"
            "name, why = _jax.per_buffer_allocator()\n"
            "_hooks.install_frameworks()\n"
            "print(json.dumps({'name': name, 'why': why, 'env': os.environ.get('XLA_PYTHON_CLIENT_ALLOCATOR'),"
            " 'prealloc': os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE'), 'imported': 'jax' in sys.modules}))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "GPULEAK_", "PYTHON"))}
    env.update(GPULEAK_JAX="per-buffer", PYTHONPATH=os.pathsep.join(p for p in (PACKAGE, site) if p))
    p = subprocess.run([sys.executable, "-S", "-c", "import sys; sys.path[:0] = %r\n" % [PACKAGE, site] + code],
                       env=env, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        failures.append("the hook failed: %s" % p.stderr)
        return {}, []
    return json.loads(p.stdout), [l for l in p.stderr.splitlines() if l]


def main():
    # The pieces, on bytes and names.
    check("names in the check's text", _jax.names_in_binary(NOISE + CHECK + b"\0"),
          {"default", "platform", "bfc", "cuda_async"})
    check("unrelated 'platform' strings", _jax.names_in_binary(NOISE), set())
    check("names in Python", _jax.names_in_python("if a not in ('default', 'platform', \"address\"):"),
          {"default", "platform", "address"})
    check("address wins", _jax.choose_allocator({"platform", "address"}, (0, 11, 2)), ("address", None))
    check("platform before 0.10", _jax.choose_allocator({"platform", "bfc"}, (0, 9, 1)), ("platform", None))
    name, why = _jax.choose_allocator({"platform", "bfc"}, (0, 10, 0))
    check("platform from 0.10", (name, "jax-ml/jax#39145" in (why or "")), (None, True))
    name, why = _jax.choose_allocator({"bfc", "cuda_async"}, (0, 4, 30))
    check("neither named", (name, "neither" in (why or "")), (None, True))

    with tempfile.TemporaryDirectory(prefix="gpuleak-jax-alloc-") as root:
        for case, want in (("old", "platform"), ("plugin", None), ("address", "address"), ("jaxlib", "address"),
                           ("none", None)):
            seen, said = run_hook(tree(root, case))
            check(case + ": chosen", seen.get("name"), want)
            check(case + ": XLA_PYTHON_CLIENT_ALLOCATOR", seen.get("env"), want)
            check(case + ": PREALLOCATE", seen.get("prealloc"), "false" if want else None)
            check(case + ": jax imported", seen.get("imported"), False)
            if want:
                check(case + ": stderr", said, [])
            else:
                ok = len(said) == 1 and said[0].startswith("gpuleak: --jax per-buffer: JAX 0.11.2 ") and \
                    "keeps its arena" in said[0]
                check(case + ": one stderr line", ok, True)
                if not ok:
                    failures.append("  stderr: %r" % said)
        seen, said = run_hook(os.path.join(root, "empty"))
        check("absent: chosen", seen.get("name"), "platform")
        check("absent: stderr", said, [])
    for f in failures:
        sys.stderr.write("FAIL: " + f + "\n")
    if not failures:
        print("ok: per-buffer allocator detection, 6 installed trees")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
