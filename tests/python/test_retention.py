"""Who keeps it (issue #30): gpuleak._retention's walk, on a fake `torch` (tests/python_frames/
fake_frameworks/site-packages/torch, copied into a temporary site-packages) whose tensors have a data pointer and
an autograd graph the garbage collector cannot see. Each program runs in its own interpreter and
prints the paths the walk would send to the shim, one JSON line each."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAKE_TORCH = ROOT / "tests" / "python_frames" / "fake_frameworks" / "site-packages" / "torch"

HEADER = '''
import json, sys
from gpuleak import _retention
def walk(event=_retention.EXIT, budget=2.0):
    r = _retention.Retention(budget)
    sent = []
    r.run(event, send=lambda e, a, s, t: sent.append((e, a, s, t.decode())))
    return r, sent
def show(sent):
    for e, a, s, t in sent:
        print(json.dumps({"event": e, "address": a, "bytes": s, "text": t}))
'''


def run(tmp_path, body, env=None, files=None, python=sys.executable):
    site = tmp_path / "site-packages"
    if not (site / "torch").exists():
        shutil.copytree(FAKE_TORCH, site / "torch")
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    program = tmp_path / "prog.py"
    program.write_text(HEADER + textwrap.dedent(body))
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPULEAK_") and k != "PYFRAMES_CUDART"}
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tools" / "python"), str(site), str(tmp_path)])
    e.update(env or {})
    p = subprocess.run([python, str(program)], cwd=tmp_path, env=e, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return lines, p


def texts(lines):
    return [l["text"] for l in lines if l["address"] != 0]


def test_lists_dicts_globals_and_class_attributes(tmp_path):
    lines, _ = run(tmp_path, '''
        import torch
        history = [torch.empty(100) for _ in range(3)]
        table = {"k": torch.empty(200)}
        class Cache:
            store = [torch.empty(300)]
        show(walk()[1])
    ''')
    t = texts(lines)
    assert t.count("`__main__.history` (list, module global) -> [3 items] -> Tensor") == 3
    assert "`__main__.table` (dict, module global) -> ['k'] -> Tensor" in t
    assert "`__main__.Cache.store` (list, class attribute) -> [1 items] -> Tensor" in t
    assert sorted(l["bytes"] for l in lines if l["address"]) == [100, 100, 100, 200, 300]
    summary = [l for l in lines if l["address"] == 0]
    assert len(summary) == 1 and "paths=5 stopped=none" in summary[0]["text"]


def test_frames_locals_closures_and_a_helper_modules_global(tmp_path):
    lines, _ = run(tmp_path, '''
        import torch, helpers
        def make():
            kept = torch.empty(64)
            def inner():
                return kept
            return inner
        fn = make()
        def main():
            sessions = {7: torch.empty(128)}
            helpers.remember(torch.empty(256))
            show(walk()[1])
        main()
    ''', files={"helpers.py": '''
        _bank = []
        def remember(t):
            _bank.append(t)
    '''})
    t = texts(lines)
    assert "`__main__.fn` (function, module global) -> closure variable `kept` (Tensor)" in t
    assert "`helpers._bank` (list, module global) -> [1 items] -> Tensor" in t
    assert any(x.startswith("`sessions` (dict, local of main at prog.py:") and x.endswith("-> [7] -> Tensor")
               for x in t), t


def test_objects_attributes_and_cycles(tmp_path):
    lines, _ = run(tmp_path, '''
        import torch
        class Module:
            def __init__(self):
                self.outputs = []
                self.me = self  # a cycle
        model = Module()
        model.outputs.append(torch.empty(10))
        ring = []
        ring.append(ring)
        ring.append(torch.empty(20))
        show(walk()[1])
    ''')
    t = texts(lines)
    assert "`__main__.model` (Module, module global) -> .outputs (list) -> [1 items] -> Tensor" in t
    assert "`__main__.ring` (list, module global) -> [2 items] -> Tensor" in t


def test_memory_held_only_through_the_autograd_graph(tmp_path):
    lines, _ = run(tmp_path, '''
        import gc, torch
        keep = []
        act = torch.empty(8192)
        out = torch.op("AddmmBackward0", 64, [], {"mat1": act})
        keep.append(torch.op("MseLossBackward0", 4, [out]))
        address = act.untyped_storage().data_ptr()
        del act, out
        assert not any(address == getattr(o, "_address", None) for o in gc.get_referents(*keep))
        r, sent = walk()
        show(sent)
        print("ADDRESS", address)
    ''')
    graph = [l for l in lines if l["bytes"] == 8192]
    assert len(graph) == 1
    assert graph[0]["text"] == ("`__main__.keep` (list, module global) -> [1 items] -> Tensor -> its autograd graph "
                                "(MseLossBackward0 -> AddmmBackward0 saved mat1)")


def test_no_framework_imported_means_no_walk_and_no_import(tmp_path):
    lines, p = run(tmp_path, '''
        r, sent = walk()
        show(sent)
        print("TORCH" if "torch" in sys.modules else "NO TORCH")
    ''')
    assert lines == [] and "NO TORCH" in p.stdout


def test_the_walk_keeps_nothing_alive_and_never_raises(tmp_path):
    lines, p = run(tmp_path, '''
        import gc, weakref, torch
        class Broken(torch.Tensor):
            def untyped_storage(self):
                raise RuntimeError("sparse")
        held = [torch.empty(10), Broken(20)]
        probe = weakref.ref(held[0])
        def f():
            scratch = torch.empty(30)
            show(walk()[1])
            return weakref.ref(scratch)
        r = f()
        del held[0]
        gc.collect()
        print("ALIVE" if probe() is not None or r() is not None else "GONE")
    ''')
    assert "GONE" in p.stdout, p.stdout
    assert len(texts(lines)) == 2  # the plain tensor and the scratch; the broken one is skipped


def test_a_budget_stops_the_walk_and_says_so(tmp_path):
    lines, _ = run(tmp_path, '''
        import torch
        data = [[i] for i in range(300000)]
        data.append([torch.empty(10)])  # past 300,000 lists: found only by a walk that is not cut short
        r, sent = walk(budget=1e-6)
        show(sent)
    ''')
    summary = [l for l in lines if l["address"] == 0]
    assert len(summary) == 1 and "stopped=budget" in summary[0]["text"]


@pytest.mark.parametrize("value,ok", [("", True), ("0.5", True), ("3", True), ("0", False), ("-1", False),
                                      ("soon", False), ("nan", False), ("inf", False)])
def test_the_budget_setting(value, ok):
    sys.path.insert(0, str(ROOT / "tools" / "python"))
    from gpuleak import _retention
    if ok:
        assert _retention.parse_budget(value) > 0
    else:
        with pytest.raises(ValueError):
            _retention.parse_budget(value)


def test_install_respects_off_and_a_bad_budget(tmp_path):
    lines, p = run(tmp_path, '''
        print(_retention.install_retention({"GPULEAK_RETENTION": "0"}))
        print(_retention.install_retention({"GPULEAK_RETENTION_BUDGET": "soon"}))
    ''')
    assert p.stdout.split() == ["None", "None"]
    err = p.stderr.splitlines()
    assert len(err) == 1 and "GPULEAK_RETENTION_BUDGET=soon" in err[0] and "off" in err[0], err


def test_an_out_of_memory_the_program_catches_walks_with_its_frames_live(tmp_path):
    lines, p = run(tmp_path, '''
        import torch
        sent = []
        r = _retention.Retention(2.0)
        r.run = lambda event, send=None: _retention.Retention.run(r, event, lambda *x: sent.append(x))
        r.watch(_retention._torch_oom(torch))
        def main():
            history = []
            torch.cuda.set_limit(5000)
            try:
                while True:
                    history.append(torch.empty(1000))
            except torch.cuda.OutOfMemoryError as e:
                print("CAUGHT", e.args[0][:20])
        main()
        for e, a, s, t in sent:
            print(json.dumps({"event": e, "address": a, "bytes": s, "text": t.decode()}))
    ''')
    assert "CAUGHT CUDA out of memory" in p.stdout
    t = texts(lines)
    assert all(l["event"] == 2 for l in lines)
    assert len(t) == 5 and all(x.startswith("`history` (list, local of main at prog.py:") for x in t), t


def test_the_exit_walk_runs_after_the_programs_own_atexit_work(tmp_path):
    lines, p = run(tmp_path, '''
        import atexit, ctypes, torch
        _retention.install_retention()
        kept = [torch.empty(10)]
        freed = [torch.empty(20)]
        atexit.register(freed.clear)  # the program's own exit work frees this one
        import gpuleak._retention as m
        orig = m.Retention.run
        def run(self, event, send=None):
            return orig(self, event, lambda *x: print(json.dumps({"event": x[0], "address": x[1], "bytes": x[2],
                                                                  "text": x[3].decode()}), flush=True))
        m.Retention.run = run
    ''')
    assert sorted(l["bytes"] for l in lines if l["address"]) == [10]


def _python_312():
    """An interpreter with sys.monitoring: this one, else python3.13/python3.12 on the PATH, else one
    that pyenv installed (Debian 12's python3 is 3.11)."""
    if sys.version_info >= (3, 12):
        return sys.executable
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates = [shutil.which(n) for n in ("python3.13", "python3.12")] + \
        sorted(str(p) for p in pyenv.glob("3.1[2-9]*/bin/python3"))
    for path in candidates:
        if path and subprocess.run([path, "-c", "import sys; sys.monitoring"], capture_output=True).returncode == 0:
            return path
    return None


def run_312(tmp_path, body, files=None):
    """run() on an interpreter with sys.monitoring; the test is skipped without one."""
    python = _python_312()
    if python is None:
        pytest.skip("no Python 3.12+ here (sys.monitoring)")
    return run(tmp_path, body, files=files, python=python)


# The walk's paths printed as they are sent, with watch_main_return() on.
WATCHED = '''
import time, torch
r = _retention.Retention(2.0)
orig = r.run
r.run = lambda event, send=None: orig(event, lambda *x: print(json.dumps(
    {"event": x[0], "address": x[1], "bytes": x[2], "text": x[3].decode()}), flush=True))
r.watch_main_return()
'''


def test_a_local_of_main_is_named_when_main_returns(tmp_path):
    lines, p = run_312(tmp_path, WATCHED + '''
def step():
    return torch.empty(10)
def main():
    history = [step() for _ in range(3)]
    time.sleep(1.1)
for _ in range(3):
    step()  # called from the script's body too: short calls, no walk
main()
''')
    assert [l["event"] for l in lines] == [3, 3, 3, 3], lines  # three paths and the summary, once
    assert all(l["text"].startswith("`history` (list, local of main at prog.py:") for l in lines[:3]), lines


def test_a_slow_import_from_the_scripts_body_is_no_main(tmp_path):
    """`import torch` from the script's body runs seconds of the import system's and the
    library's code before main() starts (the H200's history case): main() still gets its walk."""
    lines, p = run_312(tmp_path, WATCHED + '''
import slowlib  # a library that takes 1.5 s to import, longer than main() runs
import slowmine  # the user's own module, as slow
def main():
    history = [torch.empty(10) for _ in range(3)]
    time.sleep(1.1)
main()
''', files={"site-packages/slowlib.py": "import time\ntime.sleep(1.5)\n",
              "slowmine.py": "import time\ntime.sleep(1.5)\n"})
    assert [l["event"] for l in lines] == [3, 3, 3, 3], lines
    assert all(l["text"].startswith("`history` (list, local of main at prog.py:") for l in lines[:3]), lines


def test_main_called_through_a_librarys_decorator_is_watched(tmp_path):
    lines, p = run_312(tmp_path, WATCHED + '''
import runner
@runner.entry
def main():
    history = [torch.empty(10) for _ in range(2)]
    time.sleep(1.1)
main()
''', files={"site-packages/runner.py": '''
def entry(fn):
    def wrapper(*args):
        return fn(*args)
    return wrapper
'''})
    t = texts(lines)
    assert len(t) == 2 and all(x.startswith("`history` (list, local of main at prog.py:") for x in t), lines


def test_a_module_level_loop_of_slow_steps_walks_at_doubling_lengths(tmp_path):
    """Each top-level call that runs at least a second and twice as long as the last one that got
    a walk gets one: the steps of a module-level loop, once; the longer main() after them again."""
    lines, p = run_312(tmp_path, WATCHED + '''
def step():
    kept = torch.empty(10)
    time.sleep(1.0)
def main():
    history = [torch.empty(20)]
    time.sleep(2.2)
for _ in range(3):
    step()
main()
''')
    summaries = [l for l in lines if l["address"] == 0]
    assert len(summaries) == 2, lines
    t = texts(lines)
    assert t[0].startswith("`kept` (Tensor, local of step at prog.py:"), t
    assert t[1].startswith("`history` (list, local of main at prog.py:"), t


# --- the targeted walk: a census first, the program's own roots before the libraries' ------------

BIG_LIBRARY = {"site-packages/biglib.py": '''
tables = [{"row": i, "cells": [i, str(i)]} for i in range(100000)]  # 200,000 objects of a library's
_cache = []
def remember(t):
    _cache.append(t)
'''}


def summary_of(lines):
    s = [l for l in lines if l["address"] == 0]
    assert len(s) == 1, lines
    return dict(kv.split("=") for kv in s[0]["text"].split())


def test_the_walk_stops_when_every_live_tensor_has_its_path(tmp_path):
    lines, _ = run(tmp_path, '''
        import torch, biglib
        kept = {"a": torch.empty(10)}
        def main():
            history = [torch.empty(20)]
            show(walk()[1])
        main()
    ''', files=BIG_LIBRARY)
    t = texts(lines)
    assert "`__main__.kept` (dict, module global) -> ['a'] -> Tensor" in t
    assert any(x.startswith("`history` (list, local of main at prog.py:") for x in t), t
    s = summary_of(lines)
    assert s["stopped"] == "none" and int(s["objects"]) < 5000, s  # biglib's tables never entered


def test_a_tensor_only_a_library_holds_is_named_from_the_librarys_global(tmp_path):
    lines, _ = run(tmp_path, '''
        import torch, biglib
        biglib.remember(torch.empty(10))
        show(walk()[1])
    ''', files=BIG_LIBRARY)
    assert texts(lines) == ["`biglib._cache` (list, module global) -> [1 items] -> Tensor"]
    assert summary_of(lines)["stopped"] == "none"


def test_the_programs_own_path_wins_over_a_shorter_one_in_a_library(tmp_path):
    lines, _ = run(tmp_path, '''
        import torch, biglib
        class Server:
            def __init__(self):
                self.sessions = {"s1": {"state": None}}
        server = Server()
        t = torch.empty(10)
        biglib.remember(t)
        server.sessions["s1"]["state"] = t
        del t
        show(walk()[1])
    ''', files=BIG_LIBRARY)
    assert texts(lines) == ["`__main__.server` (Server, module global) -> .sessions (dict) -> ['s1'] -> dict "
                            "-> ['state'] -> Tensor"], lines


def test_a_tensor_held_only_from_c_leaves_the_rest_named(tmp_path):
    lines, _ = run(tmp_path, '''
        import torch, biglib
        hidden = torch._hold(torch.empty(10))  # a reference the collector cannot see (C++'s)
        kept = [torch.empty(20)]
        show(walk()[1])
    ''', files=BIG_LIBRARY)
    assert texts(lines) == ["`__main__.kept` (list, module global) -> [1 items] -> Tensor"]
    s = summary_of(lines)  # no Python object holds it: the libraries' objects are not searched for it
    assert s["stopped"] == "none" and int(s["objects"]) < 5000, s


def test_a_clean_program_is_not_searched(tmp_path):
    lines, _ = run(tmp_path, '''
        import torch, biglib
        show(walk()[1])
    ''', files=BIG_LIBRARY)
    assert texts(lines) == [] and summary_of(lines) == {"objects": "0", "paths": "0", "stopped": "none"}


def test_ten_thousand_sessions_in_one_dict_each_get_their_key(tmp_path):
    lines, p = run(tmp_path, '''
        import torch, time
        sessions = {"req%d" % i: torch.empty(10) for i in range(10000)}
        began = time.monotonic()
        r, sent = walk()
        show(sent)
        print("TOOK %.3f" % (time.monotonic() - began))
    ''')
    t = texts(lines)
    assert len(t) == 10000 and len(set(t)) == 10000
    assert "`__main__.sessions` (dict, module global) -> ['req9999'] -> Tensor" in t


def test_an_abstract_array_class_is_counted_through_the_frameworks_own_list(tmp_path):
    """JAX's jax.Array is an abstract class that C++'s ArrayImpl registers with: the collector's
    list cannot say which objects are arrays, jax.live_arrays() can."""
    files = dict(BIG_LIBRARY)
    files["site-packages/jax/__init__.py"] = '''
        import abc, weakref
        class Array(abc.ABC):
            pass
        class ArrayImpl:
            def __init__(self, address, nbytes):
                self._address, self.nbytes = address, nbytes
                _live.add(self)
            def unsafe_buffer_pointer(self):
                return self._address
        Array.register(ArrayImpl)
        _live = weakref.WeakSet()
        def live_arrays():
            return list(_live)
    '''
    (tmp_path / "site-packages" / "jax").mkdir(parents=True)
    lines, _ = run(tmp_path, '''
        import jax, biglib
        kept = {"x": jax.ArrayImpl(0x10000, 64)}
        show(walk()[1])
    ''', files=files)
    assert texts(lines) == ["`__main__.kept` (dict, module global) -> ['x'] -> ArrayImpl"]
    s = summary_of(lines)
    assert s["stopped"] == "none" and int(s["objects"]) < 5000, s


# --- tests/gpu/check_retention_case.py, the GPU stage's judge, on reports of the shape gpuleak writes

def _judge(tmp_path, report, summary, want, when):
    (tmp_path / "r.json").write_text(json.dumps(report))
    (tmp_path / "s.txt").write_text(summary)
    p = subprocess.run([sys.executable, str(ROOT / "tests" / "gpu" / "check_retention_case.py"), "--mode", "m",
                        "--when", when, "--want", want, "--report", str(tmp_path / "r.json"),
                        "--summary", str(tmp_path / "s.txt")], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout


def _report(verdict, text=None, event="exit", walks=(("exit", "none"),)):
    groups = [{"retained_by": {"text": text, "event": event, "bytes": 1}}] if text else [{}]
    return {"verdict": verdict, "leak_groups": groups if verdict == "leak" else [],
            "run": {"retention": {"walks": [{"event": e, "duration_ns": 5e6, "objects": 10, "stopped": s}
                                            for e, s in walks]}}}


KEPT = "`history` (list, local of main at torch_retention.py:44) -> [60 items] -> Tensor"


@pytest.mark.parametrize("report,summary,want,when,ok", [
    (_report("leak", KEPT, "return", [("return", "none"), ("exit", "none")]), "    kept by " + KEPT,
     "`history` (list, local of main", "return", True),
    (_report("clean"), "", "-", "exit", True),
    (_report("leak", KEPT, "exit", [("return", "none"), ("exit", "none")]), "    kept by " + KEPT,
     "`history` (list, local of main", "return", False),  # named by another walk than the one tested
    (_report("leak", KEPT, "exit", [("exit", "none")]), "    kept by " + KEPT,
     "`history` (list, local of main", "exit,return", True),
    (_report("leak", KEPT, "return", [("exit", "none")]), "    kept by " + KEPT,
     "`history` (list, local of main", "return", False),  # no walk at main()'s return ran
    (_report("leak", KEPT, "exit", [("exit", "budget")]), "    kept by " + KEPT,
     "`history` (list, local of main", "exit", False),  # the walk hit the time budget
    (_report("leak", KEPT), "", "`history` (list, local of main", "exit", False),  # no "kept by" line
    (_report("clean"), "    kept by " + KEPT, "-", "exit", False),
    (_report("leak"), "", "-", "exit", False),
])
def test_the_gpu_stages_judge(tmp_path, report, summary, want, when, ok):
    rc, out = _judge(tmp_path, report, summary, want, when)
    assert (rc == 0) == ok and out.startswith("PASS" if ok else "FAIL"), out
