"""safetensors files with numpy only, so the package needs neither torch nor safetensors.

Layout as io/safetensors_write.cpp writes it: an 8-byte little-endian header length,
the JSON header (padded with spaces so the data starts 64-byte aligned), then the
tensors, each at a 64-byte aligned offset (zero gaps between them). The reader also
takes foreign files with tensors packed back to back (possibly unaligned).
"""
from __future__ import annotations

import json
import mmap
import os
import stat
import struct
import tempfile
from typing import Any, Mapping, Optional

import numpy as np

from .modes import as_array

ALIGNMENT = 64
MAX_HEADER = 100_000_000  # as the C++ reader (and the reference safetensors library)

_TO_NUMPY = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"), "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
    "BOOL": np.dtype("bool"),
}
_ITEMSIZE = {k: v.itemsize for k, v in _TO_NUMPY.items()}
_ITEMSIZE["BF16"] = 2
_FROM_NUMPY = {(v.kind, v.itemsize): k for k, v in _TO_NUMPY.items()}


def bfloat16() -> np.dtype:
    """numpy has no bfloat16: BF16 tensors are ml_dtypes.bfloat16 arrays (the dtype the
    bindings hand bf16 tensors back as). Imported when first needed."""
    try:
        import ml_dtypes
    except ImportError as e:  # a dependency of the package; say what is missing
        raise WeightsError("BF16 tensors need the ml_dtypes package (pip install ml_dtypes)") from e
    return np.dtype(ml_dtypes.bfloat16)


class WeightsError(ValueError):
    pass


def dtype_name(dtype: np.dtype) -> str:
    dt = np.dtype(dtype)
    if dt.kind == "V" and dt.itemsize == 2 and dt.name == "bfloat16":
        return "BF16"
    name = _FROM_NUMPY.get((dt.kind, dt.itemsize))
    if name is None:
        raise WeightsError(f"numpy dtype {dt} has no safetensors equivalent")
    return name


def _align(v: int, a: int) -> int:
    return (v + a - 1) // a * a


def write(path, tensors: Mapping[str, Any], metadata: Optional[Mapping[str, str]] = None,
          alignment: int = ALIGNMENT) -> None:
    """Writes `tensors` (name -> array, in mapping order) atomically: temp file, fsync, rename."""
    path = os.fspath(path)
    alignment = max(int(alignment), 1)
    arrays = []
    for name, value in tensors.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise WeightsError(f"{path}: invalid tensor name {name!r}")
        arr = as_array(value)
        if not arr.flags.c_contiguous:
            arr = arr.copy(order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)
        dt = dtype_name(arr.dtype)
        # little-endian on disk; bfloat16 (native order) goes out as its 16 bits
        arr = arr.view("<u2") if dt == "BF16" else arr.astype(_TO_NUMPY[dt], copy=False)
        arrays.append((name, dt, arr))
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offsets, offset = [], 0
    for name, dt, arr in arrays:
        offset = _align(offset, alignment)
        offsets.append(offset)
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    # Spaces are JSON whitespace: the data section starts aligned.
    text += b" " * (_align(8 + len(text), max(alignment, 8)) - 8 - len(text))

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            pos = 0
            for (name, dt, arr), begin in zip(arrays, offsets):
                f.write(b"\0" * (begin - pos))
                f.write(memoryview(arr).cast("B") if arr.nbytes else b"")
                pos = begin + arr.nbytes
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(directory)


def fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class _Entry:
    __slots__ = ("name", "dtype", "shape", "begin", "end")

    def __init__(self, name, dtype, shape, begin, end):
        self.name, self.dtype, self.shape, self.begin, self.end = name, dtype, shape, begin, end

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


def _no_duplicates(pairs):
    # json.loads keeps the last of duplicate keys; the C++ reader refuses them at any depth.
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise WeightsError(f"duplicate key {k!r} in the JSON header")
        obj[k] = v
    return obj


_ENTRY_KEYS = {"dtype", "shape", "data_offsets"}
_INT64_MAX = 2**63 - 1


def read_header(path) -> tuple[dict[str, _Entry], dict[str, str], int]:
    """(entries by name in file order, metadata, data section start), validated against
    the file size with the rules of the C++ reader (io/safetensors.cpp), so both accept
    and refuse the same files."""
    path = os.fspath(path)
    # Non-blocking and checked before reading: a FIFO under this name is an error, not a hang.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise WeightsError(f"{path}: not a regular file")
        size = st.st_size
        with os.fdopen(fd, "rb", closefd=False) as f:
            head = f.read(8)
            if len(head) < 8:
                raise WeightsError(f"{path}: not a safetensors file (shorter than 8 bytes)")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER or 8 + n > size:
                raise WeightsError(f"{path}: header length {n} does not fit the file ({size} bytes)")
            raw = f.read(n)
    finally:
        os.close(fd)
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except WeightsError as e:
        raise WeightsError(f"{path}: {e}") from None
    except RecursionError:
        raise WeightsError(f"{path}: the header is not valid JSON: nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise WeightsError(f"{path}: the header is not valid JSON: {e}") from None
    if not isinstance(header, dict):
        raise WeightsError(f"{path}: the header is not a JSON object")
    data_start = 8 + n
    data_len = size - data_start
    meta = header.pop("__metadata__", {})
    if not isinstance(meta, dict):
        raise WeightsError(f"{path}: __metadata__ is not an object")
    for k, v in meta.items():
        if not isinstance(v, str):
            raise WeightsError(f"{path}: __metadata__ value of {k!r} is not a string")
    entries = []
    for name, e in header.items():
        def bad(msg):
            raise WeightsError(f"{path}: tensor {name!r}: {msg}")

        if not isinstance(e, dict):
            bad("entry is not an object")
        extra = set(e) - _ENTRY_KEYS
        if extra:
            bad(f"unexpected key {sorted(extra)[0]!r}")
        missing = _ENTRY_KEYS - set(e)
        if missing:
            bad(f"missing {sorted(missing)[0]!r}")
        dt, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
        if dt not in _ITEMSIZE:
            bad(f"unsupported dtype {dt!r}")
        if not isinstance(shape, list) or not all(type(d) is int and 0 <= d <= _INT64_MAX for d in shape):
            bad(f"invalid shape {shape!r}")
        if (not isinstance(offs, list) or len(offs) != 2 or not all(type(o) is int and o >= 0 for o in offs)
                or not offs[0] <= offs[1] <= data_len):
            bad(f"invalid data_offsets {offs!r} (data section is {data_len} bytes)")
        count = 1
        for d in shape:
            count *= d
        if count * _ITEMSIZE[dt] > 2**64 - 1:
            bad(f"shape {shape} overflows")
        if count * _ITEMSIZE[dt] != offs[1] - offs[0]:
            bad(f"{dt}{shape} needs {count * _ITEMSIZE[dt]} bytes, data_offsets give {offs[1] - offs[0]}")
        entries.append(_Entry(name, dt, tuple(shape), offs[0], offs[1]))
    entries.sort(key=lambda x: x.begin)
    prev = None  # empty tensors occupy no bytes and overlap nothing
    for x in entries:
        if x.nbytes == 0:
            continue
        if prev is not None and x.begin < prev.end:
            raise WeightsError(f"{path}: tensors {prev.name!r} and {x.name!r} overlap")
        prev = x
    return {x.name: x for x in entries}, dict(meta), data_start


def read(path, names=None) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(name -> read-only array, metadata). Arrays view a memory map of the file (zero copy)."""
    entries, meta, start = read_header(path)
    if names is not None:
        missing = [n for n in names if n not in entries]
        if missing:
            raise WeightsError(f"{os.fspath(path)}: no tensor named {missing[0]!r}")
        entries = {n: entries[n] for n in names}
    out: dict[str, np.ndarray] = {}
    mm = None
    if any(e.nbytes for e in entries.values()):
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    for name, e in entries.items():
        if e.dtype == "BF16":
            raw = np.frombuffer(mm, np.dtype("<u2"), e.nbytes // 2, start + e.begin) if e.nbytes else np.zeros(0, "<u2")
            arr = raw.view(bfloat16()).reshape(e.shape)  # as the VM loads it: 16 bits an element
        elif e.nbytes:
            arr = np.frombuffer(mm, _TO_NUMPY[e.dtype], e.nbytes // _ITEMSIZE[e.dtype], start + e.begin).reshape(e.shape)
        else:
            arr = np.zeros(e.shape, _TO_NUMPY[e.dtype])
        arr.flags.writeable = False
        out[name] = arr
    return out, meta
