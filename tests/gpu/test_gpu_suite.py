"""A GPU test suite with one leaking test among clean ones (issue #33), for run_observed_loops.sh:
`gpuleak run -- python -m pytest test_gpu_suite.py` must end with `gpuleak check` exiting 1 and
naming test_gpu_suite.py::test_leaky_step and its `# @keep-pytest` line. test_leaky_step keeps
each step's output until it returns (the growth is released when the test returns: still its
leak). It writes the bytes it kept per step to $GPULEAK_SUITE_RESULT (JSON) for the checker.
Skips (pytest's skip) without torch or a GPU."""
import json
import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch sees no CUDA device", allow_module_level=True)

STEPS = 40


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return torch.nn.Linear(1024, 1024).cuda()


def test_clean_forward(model):
    x = torch.randn(256, 1024, device="cuda")
    with torch.no_grad():
        for _ in range(STEPS):
            y = model(x)
    assert y.shape == (256, 1024)


def test_leaky_step(model):
    x = torch.randn(256, 1024, device="cuda")
    history = []
    with torch.no_grad():
        for i in range(STEPS):
            history.append(model(x + i))  # @keep-pytest
    kept = history[-1].numel() * history[-1].element_size()
    path = os.environ.get("GPULEAK_SUITE_RESULT")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"kept_bytes_per_step": kept, "steps": STEPS, "version": f"torch {torch.__version__}"}, f)
    assert len(history) == STEPS


def test_clean_train(model):
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device="cuda")
    for _ in range(STEPS):
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
