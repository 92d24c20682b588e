"""The user's own line as the headline: a training loop whose leaks are allocated inside an
installed package (a fake torch-like library written to a temporary site-packages folder), two of
them from one line of the user's code through two library functions, and one from another line.
The report must head them with the user's lines, say which library function each went through, and
group the two sites of one line into one finding."""
import os
import sys
import tempfile

from pyframes_common import done, expect, iteration_begin, iteration_end

STEPS = 24
LINEAR_SIZE = (1 << 20) + 31
GELU_SIZE = (1 << 20) + 37
NORM_SIZE = (1 << 20) + 41

LIBRARY = '''
import ctypes
from pyframes_common import cudart


class Linear:
    def forward(self, n):
        p = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n))
        return p


class GELU:
    def forward(self, n):
        p = ctypes.c_void_p()
        cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n))
        return p
'''

site = os.path.join(tempfile.mkdtemp(prefix="gpuleak-venv-"), "lib", "python3", "site-packages")
os.makedirs(os.path.join(site, "fakenn"))
with open(os.path.join(site, "fakenn", "__init__.py"), "w") as f:
    f.write(LIBRARY)
sys.path.insert(0, site)
import fakenn  # noqa: E402


def train_step(kept):
    kept.append(fakenn.Linear().forward(LINEAR_SIZE)); kept.append(fakenn.GELU().forward(GELU_SIZE))  # @step_line
    kept.append(fakenn.Linear().forward(NORM_SIZE))  # @norm_line


def train(steps):
    kept = []
    for _ in range(steps):
        iteration_begin()
        train_step(kept)
        iteration_end()
    return kept


kept = train(STEPS)

HERE = __file__
qual = fakenn.Linear.forward.__qualname__ if sys.version_info >= (3, 11) else "forward"
qual_gelu = fakenn.GELU.forward.__qualname__ if sys.version_info >= (3, 11) else "forward"
expect(LINEAR_SIZE, STEPS, leak=True, frames=[(qual, None, None), ("train_step", HERE, "step_line")],
       headline=("train_step", HERE, "step_line", qual))
expect(GELU_SIZE, STEPS, leak=True, frames=[(qual_gelu, None, None), ("train_step", HERE, "step_line")],
       headline=("train_step", HERE, "step_line", qual_gelu))
expect(NORM_SIZE, STEPS, leak=True, frames=[(qual, None, None), ("train_step", HERE, "norm_line")],
       headline=("train_step", HERE, "norm_line", qual))
done()
