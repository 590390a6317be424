"""tensorvm: a tiny RISC-style tensor VM with an SSA text IR.

The package is assembled at install time: tensorvm._C (the C++ runtime),
tensorvm.pycompiler (builder, tracer, exporter, importers, CLI; the repo's pycompiler/)
and tensorvm.reference (reference ops; the repo's reference/), plus, from `pip install`,
bin/tensorvm-run, include/ and lib/ (the C++ library and its CMake package; see
tensorvm.get_cmake_dir). This file re-exports the public API of tensorvm.pycompiler
and the importer: tensorvm.load, tensorvm.import_hf, tensorvm.register_architecture, ...
and tensorvm.testing (compare_generate: parity with transformers' generate), and
tensorvm.ray (a Ray Data map_batches class; docs/scale.md).
"""
import sys as _sys

from .pycompiler import *  # noqa: F401,F403
from .pycompiler import __all__ as _pycompiler_all
from .pycompiler import ray, testing
from .pycompiler.import_hf import import_hf
from .pycompiler.importers import Architecture, UnsupportedConfig, register_architecture
from .pycompiler.locations import get_cmake_dir, get_include_dir

# `import tensorvm.testing` and `import tensorvm.ray` find the modules under their public names
# (tensorvm.ray imports Ray only when a dataset is mapped: `import tensorvm` never needs it)
_sys.modules.setdefault(__name__ + ".testing", testing)
_sys.modules.setdefault(__name__ + ".ray", ray)

__all__ = [*_pycompiler_all, "import_hf", "register_architecture", "Architecture", "UnsupportedConfig", "testing", "ray",
           "get_cmake_dir", "get_include_dir"]
