"""The program directory: tensorvm's file format, written and read here and nowhere else.

A program directory holds program.py (the IR), weights.safetensors (only the
weights the IR names) and meta.json, and may hold extra files (a tokenizer's, under
tokenizer/, named by meta.json). It is written into a temporary sibling
directory and renamed into place, so readers see the old program or the new one,
never a mix; an existing directory is replaced only if it is a program directory.
What runs a program (program.py: the C++ VM, replay.py: Python) only reads it
through this module, as TVM's executable.cc holds the format apart from vm.cc.
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

from . import weights_io

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


def write_file_atomic(path, data) -> None:
    """Writes `data` (str as UTF-8, bytes, or a function writing to a binary file) to a
    temporary file beside `path`, renamed over it once complete: a reader sees the old
    file or the new one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.resolve().parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data.encode("utf-8") if isinstance(data, str) else bytes(data))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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


def _extra_name(name: str) -> Path:
    """A relative path inside the program directory that names no part of the program."""
    rel = Path(name)
    if (not name or rel.is_absolute() or "\\" in name or any(p in ("", ".", "..") for p in name.split("/"))
            or name in (PROGRAM_FILE, WEIGHTS_FILE, META_FILE)):
        raise ProgramError(f"extra file name {name!r} must be a relative path inside the program directory, "
                           f"other than {PROGRAM_FILE}, {WEIGHTS_FILE} and {META_FILE}")
    return rel


def write_program_dir(path, text: str, weights: dict, meta: dict, extra_files: dict | None = None) -> Path:
    """Writes a program directory atomically from its parts; returns its path.
    `extra_files` ({name inside the directory: source file}) are copied in within the
    same atomic write."""
    path = Path(path)
    extras = {_extra_name(str(n)): Path(src) for n, src in (extra_files or {}).items()}
    for src in extras.values():
        if not src.is_file():
            raise ProgramError(f"extra file {src} is not a regular file")
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
        for rel, src in extras.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, tmp / rel)
            with open(tmp / rel, "rb+") as f:
                os.fsync(f.fileno())
        for d in {str((tmp / rel).parent) for rel in extras}:
            weights_io.fsync_dir(d)
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


def read_program_text(path) -> str:
    """The IR text of the program directory `path`, with universal newlines."""
    return read_regular_file(Path(path) / PROGRAM_FILE).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
