"""tensorvm: a tiny RISC-style tensor VM with an SSA text IR.

The package is assembled at install time: tensorvm._C (the C++ runtime),
tensorvm.pycompiler (builder, tracer, exporter, importers, CLI; the repo's pycompiler/)
and tensorvm.reference (reference ops; the repo's reference/). This file re-exports
the public API of tensorvm.pycompiler.
"""
from .pycompiler import *  # noqa: F401,F403
from .pycompiler import __all__  # noqa: F401
