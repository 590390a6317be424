"""Public Python API of tensorvm (re-exported as `tensorvm`).

Model code: `from tensorvm import ops as T` (one function per op), `tensorvm.while_loop`,
`tensorvm.cond`, `tensorvm.emit`; run it eagerly (`tensorvm.mode("cpp" | "reference")`,
`tensorvm.weights(mapping)`) or trace it with a ProgramBuilder and save a program
directory; `tensorvm.load` runs it in the C++ VM, `tensorvm.replay` in Python, and
`tensorvm.check` checks program text as replay would run it, `tensorvm.diff` compares
every instruction's results (VM against replay, or two programs).
"""
from .. import _C
from .._C import VMError

from . import ops
from .builder import ProgramBuilder, ProgramFunction
from .control import cond, emit, while_loop
from .custom_ops import custom_op, register_op
from .diff import diff
from .export import export
from .ir_check import IRCheckError
from .modes import current_mode, mode, weights
from .program import Program, load, load_bytes
from .replay import check, replay
from .tracing import TracingError, Var
from .types import Tensor

__all__ = [
    "VMError", "IRCheckError", "TracingError",
    "ops", "mode", "current_mode", "weights",
    "ProgramBuilder", "ProgramFunction", "Var", "Tensor",
    "while_loop", "cond", "emit",
    "export", "load", "Program", "replay", "check", "diff",
    "register_op", "custom_op", "load_bytes",
]
