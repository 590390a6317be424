"""Program directories on disk: writing them (export) and opening them (load).

A program directory holds program.py (the IR), weights.safetensors (only the
weights the IR names) and meta.json. It is written into a temporary sibling
directory and renamed into place, so readers see the old program or the new one,
never a mix; an existing directory is replaced only if it is a program directory.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any, Optional

from . import ir, weights_io

FORMAT = "tensorvm-ir"
VERSION = 1
PROGRAM_FILE = "program.py"
WEIGHTS_FILE = "weights.safetensors"
META_FILE = "meta.json"


class ProgramError(ValueError):
    """A program directory that cannot be written or read."""


def _meta_json(meta: dict) -> str:
    for key, want in (("format", FORMAT), ("version", VERSION)):
        if key in meta and meta[key] != want:
            raise ProgramError(f"meta[{key!r}] is reserved (it is {want!r})")
    full = {"format": FORMAT, "version": VERSION, **{k: v for k, v in meta.items() if k not in ("format", "version")}}
    try:
        return json.dumps(full, indent=2, sort_keys=False, allow_nan=False) + "\n"
    except (TypeError, ValueError) as e:
        raise ProgramError(f"meta must be JSON-serialisable: {e}") from None


def _write_file(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _is_program_dir(path: Path) -> bool:
    return path.is_dir() and ((path / PROGRAM_FILE).is_file() or (path / META_FILE).is_file())


_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swaps two paths (Linux renameat2); False where unsupported."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    AT_FDCWD = -100
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return fn(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0


def write_program_dir(path, text: str, weights: dict, meta: dict) -> Path:
    """Writes a program directory atomically from its parts; returns its path."""
    path = Path(path)
    if path.exists() and not _is_program_dir(path):
        raise ProgramError(f"{path} exists and is not a program directory; refusing to replace it")
    parent = path.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    meta_text = _meta_json(dict(meta))
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=parent))
    try:
        _write_file(tmp / PROGRAM_FILE, text)
        weights_io.write(tmp / WEIGHTS_FILE, weights)
        _write_file(tmp / META_FILE, meta_text)
        os.chmod(tmp, 0o755)
        weights_io.fsync_dir(str(tmp))
        target = parent / path.name
        if not target.exists():
            os.rename(tmp, target)
        elif _exchange(tmp, target):
            shutil.rmtree(tmp)  # now the old program
        else:
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=parent))
            os.rmdir(old)
            os.rename(target, old)
            try:
                os.rename(tmp, target)
            except BaseException:
                os.rename(old, target)
                raise
            shutil.rmtree(old, ignore_errors=True)
        weights_io.fsync_dir(str(parent))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def export(builder, path) -> Path:
    """Traces what is left, checks the text, and writes the builder's program directory."""
    from .ir_check import check

    text = builder.text()
    check(text)  # the printer's output must be valid IR; a failure here is a tensorvm bug
    names = builder.used_weights()
    from .modes import as_array

    weights = {n: as_array(builder.weights[n]) for n in names}
    return write_program_dir(path, text, weights, builder.meta)


# ---------------------------------------------------------------- loading


def _coerce(value: Any, type_: str, what: str) -> Any:
    """A host input in the form the declared parameter type wants (numpy scalars become Python ones)."""
    import numpy as np

    def scalar():
        if isinstance(value, np.ndarray):
            if value.ndim != 0:
                raise TypeError(f"{what} is declared {type_} but got an array of shape {list(value.shape)}")
            return value.item()
        if isinstance(value, np.generic):
            return value.item()
        return value

    if type_ == "int":
        v = scalar()
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{what} is declared int, got {type(v).__name__} {v!r}")
        return v
    if type_ == "float":
        v = scalar()
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{what} is declared float, got {type(v).__name__} {v!r}")
        return float(v)
    if type_ == "bool":
        v = scalar()
        if not isinstance(v, bool):
            raise TypeError(f"{what} is declared bool, got {type(v).__name__} {v!r}")
        return v
    if type_ == "str":
        v = scalar()
        if not isinstance(v, str):
            raise TypeError(f"{what} is declared str, got {type(v).__name__} {v!r}")
        return v
    if type_ == "Tensor":
        if isinstance(value, np.ndarray):
            return value
        if isinstance(value, (list, tuple, int, float, bool, np.generic)):
            return np.asarray(value)
        if hasattr(value, "__array__") or hasattr(value, "detach"):
            from .modes import as_array

            return as_array(value)
        raise TypeError(f"{what} is declared Tensor, got {type(value).__name__}")
    return value


def coerce_inputs(fn: ir.Function, inputs: tuple) -> list:
    if len(inputs) != len(fn.params):
        sig = ", ".join(f"{p.name}: {p.type}" for p in fn.params)
        raise TypeError(f"{fn.name}({sig}) takes {len(fn.params)} inputs, got {len(inputs)}")
    return [_coerce(v, p.type, f"input '{p.name}' of {fn.name}") for v, p in zip(inputs, fn.params)]


def shape_result(fn: ir.Function, outs: list) -> Any:
    """What the replay of `fn` returns: None, the value, or a tuple (k > 1 values).

    A one-value function returns its value bare even if declared "-> tuple[T]",
    because its Python `return a` does.
    """
    outs = list(outs)
    if len(fn.return_types) > 1:
        return tuple(outs)
    if not fn.return_types:
        return None
    if len(outs) != 1:
        raise RuntimeError(f"{fn.name} returned {len(outs)} values, expected 1")
    return outs[0]


class Program:
    """A program directory opened from Python: `.run` in the C++ VM, `.replay` in Python."""

    def __init__(self, path, num_threads: int = 1, max_instructions: int = 0, copy_weights: bool = False):
        """`max_instructions` bounds one run (0: no limit; see SessionOptions); with
        `copy_weights` the weights are read into memory instead of mapped, so a file
        truncated in place later cannot raise SIGBUS (docs/runtime.md)."""
        self.path = Path(path)
        if not self.path.is_dir():
            raise ProgramError(f"{self.path}: not a program directory (expected a directory with {PROGRAM_FILE})")
        try:
            # Universal newlines, as read_text gave.
            self.ir = read_regular_file(self.path / PROGRAM_FILE).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        except (OSError, UnicodeDecodeError) as e:
            raise ProgramError(f"{self.path / PROGRAM_FILE}: {e}") from None
        self.meta = read_meta(self.path)
        self.num_threads = num_threads
        self.max_instructions = max_instructions
        self.copy_weights = copy_weights
        self._module: Optional[ir.Module] = None
        self._vm_program = None
        self._session = None
        self._replayer = None

    def __repr__(self) -> str:
        return f"<tensorvm.Program {self.path} functions={self.functions}>"

    @property
    def module(self) -> ir.Module:
        if self._module is None:
            from .ir_check import parse

            self._module = parse(self.ir, filename=str(self.path / PROGRAM_FILE))
        return self._module

    @property
    def functions(self) -> list[str]:
        return self.module.function_names

    def signature(self, function: str) -> str:
        return self.module.function(function).signature()

    @property
    def session(self):
        """The C++ session, created on first use."""
        if self._session is None:
            from .. import _C

            if not hasattr(_C, "Program") or not hasattr(_C, "Session"):
                raise NotImplementedError("this build of tensorvm has no VM bindings (tensorvm._C.Program/Session)")
            self._vm_program = _C.Program.load(str(self.path), copy_weights=self.copy_weights)
            self._session = _C.Session(self._vm_program, self.num_threads, max_instructions=self.max_instructions)
        return self._session

    def run(self, function: str, *inputs: Any, on_emit=None) -> Any:
        """Runs `function` in the C++ VM; returns a value, a tuple of values, or None.
        `on_emit(channel, value)` receives the program's emits (docs/ir.md, emit);
        returning False from it answers "stop"."""
        fn = self.module.function(function)
        args = coerce_inputs(fn, inputs)
        if on_emit is None:
            return shape_result(fn, self.session.run(function, args))
        return shape_result(fn, self.session.run(function, args, on_emit))

    def generate(self, input_ids, attention_mask=None, **kwargs) -> Any:
        """transformers-style `generate` over the program's `generate` function, in the
        C++ VM (see tensorvm.pycompiler.generation)."""
        from .generation import generate

        return generate(self, input_ids, attention_mask, **kwargs)

    def replay(self, function: str, *inputs: Any, on_emit=None) -> Any:
        """Runs `function` line by line in Python with the reference ops."""
        if self._replayer is None:
            from .replay import Replayer

            self._replayer = Replayer(self.path, text=self.ir)
        return self._replayer.run(function, *inputs, on_emit=on_emit)

    def weights_info(self) -> list[tuple[str, str, tuple, int]]:
        entries, _, _ = weights_io.read_header(self.path / WEIGHTS_FILE)
        return [(e.name, e.dtype, e.shape, e.nbytes) for e in entries.values()]


def read_regular_file(path) -> bytes:
    """The bytes of a regular file. Opened non-blocking and checked before reading, so
    a FIFO or device under a program's file name is an error rather than a hang."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def read_meta(path: Path) -> dict:
    meta_path = Path(path) / META_FILE
    try:
        meta = json.loads(read_regular_file(meta_path).decode("utf-8"))
    except FileNotFoundError:
        raise ProgramError(f"{meta_path}: missing") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProgramError(f"{meta_path}: {e}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ProgramError(f"{meta_path}: not a tensorvm program (format is {meta.get('format') if isinstance(meta, dict) else meta!r})")
    if meta.get("version") != VERSION:
        raise ProgramError(f"{meta_path}: unsupported program version {meta.get('version')!r} (this reader knows {VERSION})")
    return meta


def load(path, num_threads: int = 1, max_instructions: int = 0, copy_weights: bool = False) -> Program:
    """Opens a program directory written by export()."""
    return Program(path, num_threads=num_threads, max_instructions=max_instructions, copy_weights=copy_weights)
