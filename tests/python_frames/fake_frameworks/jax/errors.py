"""The fake jax.errors."""


class JaxRuntimeError(RuntimeError):
    pass
