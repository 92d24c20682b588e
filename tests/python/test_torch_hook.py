"""The PyTorch start-up hook (gpuleak._hooks.install_torch, gpuleak._torch) where no PyTorch is
installed: it must wait for `import torch`, and every way it cannot attach must be one line on
stderr and leave the program alone. The attaching itself runs on the GPU machine
(tests/gpu/run_frameworks.sh, torch-default cases)."""
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

from conftest import FAKE_GPU
from gpuleak import _hooks, _torch


def test_after_import_runs_once_the_package_has_run(tmp_path, monkeypatch):
    pkg = tmp_path / "gl_fake_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("READY = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    _hooks.after_import("gl_fake_pkg", lambda m: seen.append(getattr(m, "READY", False)))
    assert seen == []
    import gl_fake_pkg  # noqa: F401
    assert seen == [True]
    assert not any(isinstance(f, _hooks._AfterImport) for f in sys.meta_path)
    _hooks.after_import("gl_fake_pkg", lambda m: seen.append("again"))  # imported already: at once
    assert seen == [True, "again"]


def fake_torch(tmp_path, headers):
    root = tmp_path / "site" / "torch"
    (root / "lib").mkdir(parents=True)
    if headers:
        h = root / "include" / "c10" / "cuda"
        h.mkdir(parents=True)
        (h / "CUDACachingAllocator.h").write_text("#error not PyTorch's header\n")
    (root / "__init__.py").write_text("")
    return types.SimpleNamespace(__file__=str(root / "__init__.py"), __version__="9.9.9+test",
                                 _C=types.SimpleNamespace(_GLIBCXX_USE_CXX11_ABI=True))


def test_a_torch_without_headers_keeps_the_segment_view(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GPULEAK_TORCH_ADAPTER", raising=False)
    assert _torch.attach(fake_torch(tmp_path, headers=False)) is False
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "ships no C++ headers" in err[0] and "segments" in err[0], err


def test_headers_that_do_not_fit_are_said_in_one_line_and_not_cached(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GPULEAK_TORCH_ADAPTER", raising=False)
    monkeypatch.setenv("GPULEAK_CACHE_DIR", str(tmp_path / "cache"))
    cuda = tmp_path / "cuda" / "include"
    cuda.mkdir(parents=True)
    (cuda / "cuda_runtime_api.h").write_text("")
    monkeypatch.setenv("CUDA_HOME", str(cuda.parent))
    if not (os.environ.get("CXX") or any(Path(d, "c++").exists() for d in os.environ["PATH"].split(":"))):
        return  # no compiler here: the no-compiler line is the answer, tested below in effect
    assert _torch.attach(fake_torch(tmp_path, headers=True)) is False
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "do not fit the adapter" in err[0] and "9.9.9+test" in err[0], err
    assert not list((tmp_path / "cache").rglob("*.so")), "a failed build left a library in the cache"


def test_a_prebuilt_adapter_that_is_missing_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GPULEAK_TORCH_ADAPTER", str(tmp_path / "nope.so"))
    assert _torch.attach(fake_torch(tmp_path, headers=False)) is False
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "GPULEAK_TORCH_ADAPTER" in err[0], err


def test_the_adapter_source_ships_with_the_package():
    src = _torch.adapter_source()
    assert src is not None and src.name == "trace_tracker.cpp"
    assert "attachAllocatorTraceTracker" in src.read_text()


def test_gpuleak_run_asks_for_the_tracker_only_with_the_default_allocator(gpu_env, tmp_path):
    probe = "import os; print(os.environ.get('GPULEAK_TORCH_TRACKER'))"
    seen = {}
    for mode in ("default", "segments", "per-tensor"):
        p = subprocess.run([str(gpu_env.cli), "run", "--quiet", "--no-report", "--out", str(tmp_path), "--torch", mode,
                            "--", sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        seen[mode] = p.stdout.strip()
    assert seen == {"default": "1", "segments": "None", "per-tensor": "None"}


def test_a_program_that_imports_no_torch_pays_nothing_visible(gpu_env, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent("""
        import sys
        print("finders", *sorted(f.name for f in sys.meta_path if type(f).__name__ == "_AfterImport"))
    """))
    p = subprocess.run([str(gpu_env.cli), "run", "--quiet", "--no-report", "--out", str(tmp_path), "--",
                        sys.executable, str(prog)], capture_output=True, text=True, timeout=120)
    # One finder per package a hook waits for: torch (the tracker and the retention OOM watch share
    # it), cupy and jax (the retention OOM watch); none of them imports anything.
    assert p.returncode == 0 and p.stdout.strip() == "finders cupy jax torch", (p.stdout, p.stderr)
    assert "gpuleak" not in p.stderr, p.stderr


def test_the_tracker_waits_for_cudas_lazy_init(monkeypatch, capsys):
    """PyTorch creates its per-device allocators in torch.cuda._lazy_init: attaching at import would
    attach to none, and initializing CUDA ourselves would change the program."""
    calls = []

    def fake_attach(version, buf, size):
        calls.append(state["initialized"])
        return 1

    state = {"initialized": False}

    def lazy_init():
        state["initialized"] = True

    cuda = types.SimpleNamespace(is_initialized=lambda: state["initialized"], _lazy_init=lazy_init)
    torch = types.SimpleNamespace(__version__="9.9.9+test", cuda=cuda)
    monkeypatch.setattr(_torch, "_load", lambda t: fake_attach)
    assert _torch.attach(torch) is True
    assert calls == [], "attached before CUDA was initialized"
    torch.cuda._lazy_init()
    assert calls == [True], calls
    assert torch.cuda._lazy_init is lazy_init, "the wrapper stays after attaching"
    torch.cuda._lazy_init()
    assert calls == [True]
    assert capsys.readouterr().err == ""


def test_a_program_that_never_initializes_cuda_builds_nothing(monkeypatch):
    loads = []
    cuda = types.SimpleNamespace(is_initialized=lambda: False, _lazy_init=lambda: None)
    torch = types.SimpleNamespace(__version__="9.9.9+test", cuda=cuda)
    monkeypatch.setattr(_torch, "_load", lambda t: loads.append(t) or None)
    assert _torch.attach(torch) is True
    assert loads == [], "the adapter was built at import"
    torch.cuda._lazy_init()
    assert len(loads) == 1


def test_a_lazy_init_that_fails_attaches_at_the_next_one(monkeypatch):
    calls = []
    attempts = []

    def lazy_init():
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("Found no NVIDIA driver")

    cuda = types.SimpleNamespace(is_initialized=lambda: False, _lazy_init=lazy_init)
    torch = types.SimpleNamespace(__version__="9.9.9+test", cuda=cuda)
    monkeypatch.setattr(_torch, "_load", lambda t: (lambda v, b, s: calls.append(1) or 1))
    assert _torch.attach(torch) is True
    try:
        torch.cuda._lazy_init()
    except RuntimeError:
        pass
    assert calls == []
    torch.cuda._lazy_init()
    assert calls == [1]


def test_a_failure_at_cudas_initialization_is_one_line_and_not_the_programs(monkeypatch, capsys):
    def broken(t):
        raise PermissionError("[Errno 13] Permission denied: '/home/ana/.cache/gpuleak'")

    cuda = types.SimpleNamespace(is_initialized=lambda: False, _lazy_init=lambda: None)
    torch = types.SimpleNamespace(__version__="9.9.9+test", cuda=cuda)
    monkeypatch.setattr(_torch, "_load", broken)
    assert _torch.attach(torch) is True
    torch.cuda._lazy_init()  # must not raise into the program
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "PermissionError" in err[0] and "segments" in err[0], err


def test_a_cached_adapter_needs_no_compiler_nor_headers(tmp_path, monkeypatch):
    """Built ahead of time (python -m gpuleak.torch_adapter), the slim runtime image has neither."""
    monkeypatch.setenv("GPULEAK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-cuda"))
    torch = fake_torch(tmp_path, headers=False)
    source = _torch.adapter_source()
    target = _torch.cache_target(torch, source)
    assert _torch._build(torch, source)[0] is None
    target.parent.mkdir(parents=True)
    target.write_bytes(b"\x7fELF")
    assert _torch._build(torch, source) == (target, None)


def test_each_missing_need_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("GPULEAK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    torch = fake_torch(tmp_path, headers=False)
    source = _torch.adapter_source()
    assert "ships no C++ headers" in _torch._build(torch, source)[1]
    torch = fake_torch(tmp_path / "h", headers=True)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-cuda"))
    if not Path("/usr/local/cuda/include/cuda_runtime_api.h").is_file():
        assert "no CUDA headers (cuda_runtime_api.h)" in _torch._build(torch, source)[1]
    cuda = tmp_path / "cuda" / "include"
    cuda.mkdir(parents=True)
    (cuda / "cuda_runtime_api.h").write_text("")
    monkeypatch.setenv("CUDA_HOME", str(cuda.parent))
    why = _torch._build(torch, source)[1]
    assert why == _torch.NO_COMPILER and "python -m gpuleak.torch_adapter" in why, why


def test_the_ahead_of_time_build_says_what_is_missing(tmp_path):
    site = tmp_path / "site"
    fake_torch(tmp_path, headers=False)  # tmp_path/site/torch
    (site / "torch" / "__init__.py").write_text("__version__ = '9.9.9+test'\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(Path(_torch.__file__).parents[1])]),
               GPULEAK_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-m", "gpuleak.torch_adapter", "--out", str(tmp_path / "a.so")], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and p.stdout == "", (p.stdout, p.stderr)
    err = p.stderr.splitlines()
    assert len(err) == 1 and "ships no C++ headers" in err[0], err


def test_under_the_shim_the_reason_goes_to_the_summary_not_stderr(gpu_env, tmp_path):
    """The default PyTorch mode on a torch without headers: the run's summary note says which need
    is missing and what is lost, and the program's stderr stays its own (capture format 1.8)."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("__version__ = '9.9.9+test'\n")
    (tmp_path / "fake_gpu.py").write_text(FAKE_GPU)
    prog = tmp_path / "train.py"
    prog.write_text(textwrap.dedent("""
        import torch
        import fake_gpu
        kept = [fake_gpu.malloc(2 << 20) for _ in range(4)]
        print("done")
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(tmp_path), os.environ["PYTHONPATH"]]),
               GPULEAK_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([str(gpu_env.cli), "run", "--out", str(tmp_path / "out"), "--", sys.executable, str(prog)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout == "done\n", (p.stdout, p.stderr)
    assert "PyTorch tensors not seen" not in p.stderr, p.stderr
    assert "note: PyTorch's tensors were not seen: torch 9.9.9+test ships no C++ headers" in p.stderr, p.stderr
    assert "per-tensor call sites are lost" in p.stderr, p.stderr
    import json
    report = json.loads(next((tmp_path / "out").glob("*.report.json")).read_text())
    assert "ships no C++ headers" in report["run"]["allocator_note"], report["run"]
