"""gpuleak.iterate / iteration / mark / active: no-ops without the shim, iterations with it."""
import subprocess
import sys

import gpuleak
from gpuleak import report


def test_without_the_shim_every_call_is_a_no_op():
    assert gpuleak.active() is False
    gpuleak.mark("nothing listens")
    gpuleak.mark(None)
    with gpuleak.iteration("eval"):
        pass
    assert list(gpuleak.iterate([1, 2, 3])) == [1, 2, 3]
    assert list(gpuleak.iterate([], loop="empty")) == []


def test_iterate_hands_out_every_item_lazily_and_survives_break():
    seen = []

    def source():
        for i in range(5):
            seen.append(i)
            yield i

    for i in gpuleak.iterate(source(), loop="train"):
        if i == 2:
            break
    assert seen == [0, 1, 2]


def test_labels_with_odd_characters_are_accepted():
    gpuleak.mark("caf\u00e9 \udcff nul\0after")
    with gpuleak.iteration(loop="l\u00f6\u00f6p"):
        pass


PROGRAM = '''
import gpuleak
import fake_gpu

assert gpuleak.active()
kept = []
for step in gpuleak.iterate(range(12), loop="train"):
    kept.append(fake_gpu.malloc(1 << 20))      # leaks 1 MiB per step
    scratch = fake_gpu.malloc(4 << 20)
    fake_gpu.free(scratch)
with gpuleak.iteration("eval"):
    fake_gpu.free(fake_gpu.malloc(1 << 16))
gpuleak.mark("done")
'''


def test_under_the_shim_iterations_come_from_the_api(gpu_env, tmp_path):
    from conftest import FAKE_GPU
    (tmp_path / "fake_gpu.py").write_text(FAKE_GPU)
    (tmp_path / "train.py").write_text(PROGRAM)
    out = tmp_path / "out"
    proc = subprocess.run([str(gpu_env.cli), "run", "--quiet", "--out", str(out), "--", sys.executable, "train.py"],
                          cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout
    reports = sorted(out.glob("*.report.json"))
    assert len(reports) == 1, proc.stdout
    r = report.load(reports[0])
    assert r.run.program == "train.py"
    assert r.iteration_source == "api"
    assert r.analysis.primary_loop == "train"
    assert len(r.primary_iterations()) == 12
    assert {it.loop for it in r.iterations} == {"train", "eval"}
    assert r.verdict == "leak"
    assert len(r.leaks) == 1
    leak = r.leaks[0]
    assert leak.bytes_per_iteration == 1 << 20
    # The headline: the user's innermost frame, with the user's frame that called it.
    assert leak.headline["text"].startswith("fake_gpu.py:") and leak.headline["text"].endswith(" in malloc")
    assert leak.where.startswith(leak.headline["text"] + ", called from train.py:")
    assert [(f.function, f.line) for f in leak.stack if f.file and f.file.endswith("train.py")] == [("<module>", 8)]
