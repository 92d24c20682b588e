"""Who keeps it (issue #30) with real PyTorch on the GPU: the four programs of the issue's table, an
autograd-graph leak, a caught out-of-memory, and a clean run. run_retention.sh runs each mode under
`gpuleak run` and checks that the report's first leak group says who keeps it (retained_by) and the
text summary has the same "kept by" line; the clean mode must have none.

  history    `history.append(probe_loss)` in main (named when main() returns: Python 3.12+; main()
             runs at least a second, after an `import torch` that takes seconds)
  serving    `self.sessions[request_id] = ...` of a server object, never evicted
  lightning  a LightningModule-style `self.outputs.append(out.detach())` (lightning when importable)
  helper     the module global `_bank` of helpers (tests/gpu/retention_helpers.py)
  autograd   losses kept in a module-level list hold each step's activations through their graph
  oom        history in main grows until torch.cuda.OutOfMemoryError, which main catches
  clean      the same steps, nothing kept
"""
import sys
import time

import torch

import retention_helpers

STEPS = 60
DEVICE = "cuda"


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512)).to(DEVICE)


class Server:
    def __init__(self, net):
        self.net = net
        self.sessions = {}

    @torch.no_grad()
    def handle(self, request_id):
        x = torch.randn(64, 512, device=DEVICE)
        state = torch.cat([self.net(x), x], dim=1)
        self.sessions[request_id] = state  # never evicted


try:
    import lightning.pytorch as pl
    Base = pl.LightningModule
except Exception:  # no Lightning here: the same attribute on a plain module
    Base = torch.nn.Module


class LitModel(Base):
    def __init__(self):
        super().__init__()
        self.net = model()
        self.outputs = []

    def training_step(self, x):
        out = self.net(x)
        self.outputs.append(out.detach())  # never cleared (on_train_epoch_end forgotten)
        return out.square().mean()


server = None
trainer_module = None
losses = []


def main(mode):
    global server, trainer_module
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    if mode == "serving":
        server = Server(net)
        for request_id in range(STEPS):
            server.handle(request_id)
        return
    if mode == "lightning":
        trainer_module = LitModel()
        for _ in range(STEPS):
            trainer_module.training_step(torch.randn(256, 512, device=DEVICE)).backward()
        return
    history = []
    try:
        for step in range(STEPS if mode != "oom" else 10**9):
            x = torch.randn(256, 512, device=DEVICE)
            loss = (net(x) - x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            probe = torch.randn(1024, 1024, device=DEVICE)  # 4 MiB a step
            if mode in ("history", "oom"):
                history.append(probe)
            elif mode == "helper":
                retention_helpers.remember(probe)
            elif mode == "autograd":
                losses.append((net(x) * 2).sum())  # keeps the forward's saved activations
            del probe
    except torch.cuda.OutOfMemoryError:
        print("out of memory caught after %d steps" % len(history))
        history.clear()
    if mode == "history":
        time.sleep(1.2)  # main() runs at least a second: its return gets a walk (3.12+)


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        sys.exit(77)
    if sys.argv[1] == "oom":
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, (2 << 30) / total))  # OOM at ~2 GiB
    main(sys.argv[1])
