"""gpuleak._jax and gpuleak._cupy without a GPU (issue #27): the request size read from XLA's error
texts, the per-buffer allocator chosen from what the installed JAX accepts, and the one line when
it accepts neither. The sampling and the allocator wrapper run end to end under the shim in
tests/python_frames (python_loop.cupy_*, python_loop.jax_*)."""
import importlib
import sys

from gpuleak import _cupy, _jax


def test_the_request_size_comes_from_the_error_text():
    assert _jax.request_size("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.") \
        == 17179869184
    assert _jax.request_size("RESOURCE_EXHAUSTED: Failed to allocate request for 16.00GiB (17179869184B) on "
                             "device ordinal 0") == 17179869184
    assert _jax.request_size("Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.00MiB") == 2 << 20
    assert _jax.request_size("RESOURCE_EXHAUSTED: something else") == 0
    assert _jax.oom_device("on device ordinal 3") == 3
    assert _jax.oom_device("Allocator (GPU_1_bfc) ran out") == 1
    assert _jax.oom_device("no device named") == -1


def fake_jax(tmp_path, monkeypatch, names):
    src = tmp_path / "site" / "jax" / "_src"
    src.mkdir(parents=True)
    (src.parent / "__init__.py").write_text("")
    (src / "__init__.py").write_text("")
    (src / "xla_bridge.py").write_text("ALLOCATORS = (%s)\n" % ", ".join(repr(n) for n in names))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    sys.modules.pop("jax", None)
    importlib.invalidate_caches()


def test_per_buffer_prefers_address_then_platform(tmp_path, monkeypatch):
    fake_jax(tmp_path, monkeypatch, ["default", "platform", "bfc", "address"])
    assert _jax.per_buffer_allocator() == ("address", None)


def test_per_buffer_falls_back_to_platform(tmp_path, monkeypatch):
    fake_jax(tmp_path, monkeypatch, ["default", "platform", "bfc", "cuda_async"])
    assert _jax.per_buffer_allocator() == ("platform", None)


def test_a_jax_that_names_neither_keeps_its_arena_and_says_so(tmp_path, monkeypatch, capsys):
    # Neither its Python nor a shared library of it names `address` or `platform`: gpuleak sets no
    # allocator (the arena stays, its live arrays sampled) and says why in one line.
    fake_jax(tmp_path, monkeypatch, ["default", "bfc"])
    for name in ("XLA_PYTHON_CLIENT_ALLOCATOR", "XLA_PYTHON_CLIENT_PREALLOCATE"):
        monkeypatch.setenv(name, "")  # recorded as unset: put back so at teardown
        monkeypatch.delenv(name)
    assert _jax.install_per_buffer() is None
    import os
    assert "XLA_PYTHON_CLIENT_ALLOCATOR" not in os.environ
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--jax per-buffer:" in err and "neither" in err


def test_an_allocator_the_program_sets_is_described():
    class MemoryAsyncPool:
        def malloc(self, size):
            return size

    cuda = type("cuda", (), {"MemoryAsyncPool": MemoryAsyncPool})
    cupy = type("cupy", (), {"cuda": cuda})
    assert "MemoryAsyncPool" in _cupy.describe(cupy, MemoryAsyncPool().malloc)
    assert "no pool" in _cupy.describe(cupy, None)

    def mine(size):
        return size

    assert "own allocator" in _cupy.describe(cupy, mine)
