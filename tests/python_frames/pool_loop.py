"""A training-style loop over a caching allocator that reports its blocks (tensors) to gpuleak, as
run_loop_case.py runs it (fake_frameworks/site-packages/tensorlib.py plays PyTorch's allocator and
gpuleak's adapter): `pool_loop.py leak` keeps each step's 1 MiB loss (history.append(loss)),
`clean` keeps nothing. Steps differ (a data-dependent number of temporaries); there are no marks:
gpuleak finds the loop from the blocks' Python frames (python_loop), and the leak at the loss's
line, not at the cudaMalloc that grew a segment."""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_frameworks", "site-packages"))
import tensorlib  # noqa: E402

STEPS = 40
LOSS = 1 << 20


def step(rng, history, keep):
    temps = [tensorlib.empty(1 << 18)]  # the batch, on the device
    for _ in range(rng.randrange(0, 4)):  # data-dependent: 0-3 ops this step
        temps.append(tensorlib.empty(rng.randrange(1, 9) << 16))
    loss = tensorlib.empty(LOSS)  # @loss
    for t in temps:
        t.release()
    if keep:
        history.append(loss)
    else:
        loss.release()


def train(keep):
    rng = random.Random(11)
    weights = tensorlib.empty(8 << 20)
    history = []
    for _ in range(STEPS):  # @loop_head
        step(rng, history, keep)
    weights.release()
    return history


if __name__ == "__main__":
    train(sys.argv[1:] == ["leak"])
