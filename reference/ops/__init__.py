"""numpy reference ops. Plain, obvious code: these define what the kernels must compute.

One module per op family; each registers its ops in OPS with the `op` decorator
(_common.py).
"""
from ._common import OPS, OpError, op
from . import linalg, nn, shapes, indexing, elementwise, reduction, creation, fused  # noqa: F401 (each fills OPS)

# `reference.ops.add`, ... as when this was one module: every op under its name, except
# those named like a Python builtin (sum, max, pow, ...), which are in OPS only, so that
# `from .ops import *` shadows no builtin.
__all__ = ["OPS", "OpError", "op"] + sorted(name for name, fn in OPS.items() if fn.__name__ == name)
globals().update({name: OPS[name] for name in __all__[3:]})
