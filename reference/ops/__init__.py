"""numpy reference ops. Plain, obvious code: these define what the kernels must compute.

One module per op family; each registers its ops in OPS with the `op` decorator
(_common.py). `reference.ops` re-exports every op whose name is not a Python builtin's
(those are registered in OPS only), as it did when it was one file.
"""
from ._common import OPS, OpError, op
from . import linalg, nn, shapes, indexing, elementwise, reduction, creation, fused  # noqa: F401 (fill OPS)

__all__ = ["OPS", "OpError", "op"] + sorted(
    name for name, fn in OPS.items() if fn.__name__ == name and not name.startswith("_"))
globals().update({name: OPS[name] for name in __all__[3:]})
