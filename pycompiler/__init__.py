"""Public Python API of tensorvm (re-exported as `tensorvm`)."""
from .. import _C
from .._C import VMError

__all__ = ["VMError"]
