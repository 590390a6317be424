"""Where the installed package keeps its non-Python parts.

`pip install .` puts them inside the package (like pybind11 and the cmake/ninja
wheels do), so one install serves Python, the command line and C++ consumers:

    tensorvm/bin/tensorvm-run              the C++ command line (on PATH through a launcher)
    tensorvm/include/tensorvm/{vm,ops,ir}  headers
    tensorvm/lib/libtensorvm.a             the static runtime library
    tensorvm/lib/cmake/tensorvm            tensorvmConfig.cmake: find_package(tensorvm) -> tensorvm::vm
"""
from __future__ import annotations

import sys
from pathlib import Path


class NotInstalledError(FileNotFoundError):
    pass


def package_dir() -> Path:
    """The directory of the `tensorvm` package (unresolved, so a development tree of symlinks stays itself)."""
    return Path(sys.modules[__name__.rsplit(".", 2)[0]].__file__).parent


def _existing(path: Path, what: str) -> Path:
    if not path.exists():
        raise NotInstalledError(
            f"this tensorvm ({package_dir()}) has no {what} at {path}: install the package with `pip install .` "
            "(a development build made by .ci/dev-build has none)")
    return path


def get_cmake_dir() -> str:
    """The directory holding tensorvmConfig.cmake: pass it as -Dtensorvm_DIR=... (or its
    package directory as CMAKE_PREFIX_PATH), then find_package(tensorvm) gives tensorvm::vm."""
    return str(_existing(package_dir() / "lib" / "cmake" / "tensorvm", "CMake package"))


def get_include_dir() -> str:
    """The include directory for the C++ headers (#include "vm/vm.h" resolves below it)."""
    return str(_existing(package_dir() / "include" / "tensorvm", "C++ headers"))


def get_tensorvm_run() -> str:
    """The path of the tensorvm-run executable."""
    return str(_existing(package_dir() / "bin" / "tensorvm-run", "tensorvm-run executable"))
