"""Who keeps it (issue #30), on the fake CUDA: each mode leaks 1 MiB a step into a different container,
through the fake torch of fake_frameworks/site-packages/torch (storages are blocks reported to gpuleak as PyTorch's
adapter reports them), and the report's leak group must name that container in its "kept by" line.

  history   `history.append(loss)` in main, until an out-of-memory that main catches (the path is
            taken at the OOM, while main's frame is live)
  sessions  `self.sessions[request_id] = ...` of a module-level server, never evicted (at exit)
  bank      the module global `_bank` of a helper module (at exit)
  autograd  the losses kept in a module-level list hold each step's activation only through their
            autograd graph (a saved tensor of AddmmBackward0) (at exit)
  returned  `history.append(loss)` in main, which returns normally after the loop (Python 3.12+: the
            path is taken when main() returns, while its frame is live), with no marks (the loop
            observer is on, and finds the loop) and a slow `import torch` before main (as a real
            one takes seconds: FAKE_TORCH_IMPORT_SECONDS)
  clean     the same steps, nothing kept: no "kept by" line
"""
import os
import sys
import time

# The fake torch lives under a site-packages folder, so that its frames are a library's (as PyTorch's are).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_frameworks", "site-packages"))
import gpuleak  # noqa: E402
import torch  # noqa: E402

import retention_helpers  # noqa: E402

STEPS = 40
MIB = 1 << 20


class Server:
    def __init__(self):
        self.sessions = {}

    def handle(self, request_id):
        scratch = torch.empty(MIB // 4)
        state = torch.empty(MIB)  # @session
        self.sessions[request_id] = state  # never evicted
        del scratch


server = Server()
losses = []


def main(mode):
    if mode == "sessions":
        for request_id in gpuleak.iterate(range(STEPS), loop="serve"):
            server.handle(request_id)
        return
    if mode == "history":
        torch.cuda.set_limit(30 * MIB)
    history = []
    if mode == "returned":
        # No marks: the loop observer finds this loop (or --loop marks it).
        for _ in range(STEPS):  # @returned_loop
            scratch = torch.empty(MIB // 4)
            loss = torch.empty(MIB)  # @returned_loss
            history.append(loss)
            del scratch, loss
        time.sleep(1.2)  # main() runs the program: its return gets a walk (1 s at least)
        return
    try:
        for _ in gpuleak.iterate(range(STEPS), loop="train"):
            scratch = torch.empty(MIB // 4)
            if mode == "autograd":
                act = torch.empty(MIB)  # @act
                out = torch.op("AddmmBackward0", 1024, [], {"mat1": act})
                loss = torch.op("MseLossBackward0", 512, [out])
                losses.append(loss)
                del act, out, loss
            else:
                loss = torch.empty(MIB)  # @loss
                if mode == "history":
                    history.append(loss)
                elif mode == "bank":
                    retention_helpers.remember(loss)
                del loss
            del scratch
    except torch.cuda.OutOfMemoryError:
        print("out of memory, caught after %d steps" % len(history))


if __name__ == "__main__":
    main(sys.argv[1])
