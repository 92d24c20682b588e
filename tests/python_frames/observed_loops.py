"""Loops gpuleak must find with no marks, as the interpreter runs them (Python 3.12+: the loop
observer, gpuleak/_observe.py), run by run_loop_case.py: `observed_loops.py SHAPE leak|clean`.
Each leaking shape keeps KEPT bytes per iteration at the line marked `# @keep_SHAPE`:
  one_line  one framework call per step (a varying number of temporaries inside the library), the
            loop body's only allocating line: no line ever goes back (JAX's idiom);
  while     `while True:` with a break, one allocating line;
  serve     a model of LAYERS buffers built in a comprehension first (a setup loop, not a leak),
            then requests, each decoding TOKENS tokens: the request loop is the iteration, each
            request keeps its cache (one buffer per request), the token passes keep nothing;
  callback  a library's loop (steplib.Trainer.fit) calls the user's training_step once per step;
  hot       a pure-Python loop of HOT passes first (no GPU work), then the one_line loop;
  few       a loop of 3 passes, too few to be an iteration: nothing is found, and the summary says
            what was tried and which --loop line would mark it;
  jax_step  JAX's idiom against the fake JAX: `params, loss, h = step(params, x)`, one jitted call
            per step, whose outputs' buffers the fake's executor thread makes (no Python frame of the
            user's, as XLA's); the parameters and the loss are replaced each step, `leak` keeps h.
            Run with XLA_PYTHON_CLIENT_ALLOCATOR=platform, or under `gpuleak run --jax per-buffer`.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_frameworks", "site-packages"))
import steplib  # noqa: E402

STEPS = 40
KEPT = 1 << 20
OUT = 1 << 18
REQUESTS = 12
TOKENS = 16
LAYERS = 4
HOT = 200000


def one_line(leak):
    kept = []
    state = steplib.empty(OUT)
    for i in range(STEPS):
        kept.append(steplib.step(state, i, KEPT)) if leak else steplib.step(state, i, KEPT).free()  # @keep_one_line
    return kept


def while_true(leak):
    kept = []
    i = 0
    while True:
        out = steplib.step(None, i, KEPT)  # @keep_while
        if leak:
            kept.append(out)
        else:
            out.free()
        i += 1
        if i == STEPS:
            break
    return kept


def serve(leak):
    # The model, built in a comprehension before the request loop and kept to the end: a setup
    # loop (report loops[].setup), never the leak.
    layers = [steplib.empty(KEPT) for _ in range(LAYERS)]  # noqa: F841
    caches = []
    for r in range(REQUESTS):
        cache = steplib.empty(KEPT)  # @keep_serve
        for t in range(TOKENS):
            logits = steplib.step(cache, t, OUT)
            logits.free()
        if leak:
            caches.append(cache)
        else:
            cache.free()
    return caches


class Model:
    def __init__(self, leak):
        self.leak = leak
        self.history = []

    def training_step(self, batch, i):
        loss = steplib.empty(OUT)
        if self.leak:
            self.history.append(steplib.empty(KEPT))  # @keep_callback
        return loss


def callback(leak):
    model = Model(leak)
    steplib.Trainer(STEPS).fit(model)
    return model.history


def hot(leak):
    total = 0
    for i in range(HOT):
        total += i & 7
    return [total] + one_line(leak)


def few(leak):
    kept = []
    for i in range(3):  # @few_loop
        kept.append(steplib.empty(KEPT))  # @few_keep
    return kept


def jax_step(leak):
    import jax

    def body(params, x):
        h = jax.ones(KEPT)
        loss = jax.ones(4)
        return jax.ones(KEPT), loss, h

    step = jax.jit(body)
    params, x = jax.ones(KEPT), jax.ones(OUT)
    kept = []
    for i in range(STEPS):
        params, loss, h = step(params, x); kept.append(h) if leak else None  # @keep_jax_step
    return kept


if __name__ == "__main__":
    shape, mode = sys.argv[1], sys.argv[2]
    {"one_line": one_line, "while": while_true, "serve": serve, "callback": callback, "hot": hot, "few": few,
     "jax_step": jax_step}[shape](mode == "leak")
