"""torch.cuda.empty_cache() every step (issue #28), on the fake CUDA: each step makes 12 tensors of
8 MiB (two 64 MiB segments of the fake torch's caching allocator), drops them, and empties the cache,
so both segments go back to CUDA and the next step maps them again. The cache_thrash advice must
lead with the empty_cache() line (the mark gpuleak's Python hook records), not the tensors' line.

  thrash  as above
  fixed   the same steps, empty_cache() once after the loop: no cache_thrash
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_frameworks", "site-packages"))
import gpuleak  # noqa: E402
import torch  # noqa: E402

MIB = 1 << 20


def main(mode):
    for _ in gpuleak.iterate(range(20), loop="train"):
        acts = [torch.empty(8 * MIB) for _ in range(12)]
        del acts
        if mode == "thrash":
            torch.cuda.empty_cache()  # @empty
    torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "thrash"))
