"""The numerics debugger: `tensorvm diff` and `tensorvm.diff`.

Runs a function twice and compares every instruction's results, in the order the
first run executed them:
- one program: the C++ VM against the Python reference replay (reference ops, line
  for line), to find the kernel that departs from its reference;
- two programs (say float32 and its w8a8 version): both in the C++ VM, aligned by
  SSA name, to find where a quantized model departs.

The VM's side is its per-instruction hook (vm::Hook, as the profiler's); the replay's
is the same statement-by-statement view (replay.Replayer's `watch`). Values are
copied as they are produced, so everything compared is kept in memory: diff a small
input. Errors are normwise: max_abs = max |a - b| over the elements and max_rel =
max_abs / max |b|, b being the reference (the replay, or the first program); an
instruction is past the tolerance when max_abs > atol + rtol * max |b|. Elements equal
in both (infinities included) and NaN in both count as no error.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .. import _C
from .profile import inputs_by_name

# A quantized program names its linears and token embeddings after the op (linear_w8a8_3
# where float32 has linear_3, embedding_int8_0 for embedding_0); alignment by name maps them back.
_QUANTIZED = re.compile(r"^(linear|embedding)_(?:int8|w8a8|int4|w4a8)(_\d+)?$")


def _align_name(name: str) -> str:
    m = _QUANTIZED.match(name)
    return m.group(1) + (m.group(2) or "") if m else name


@dataclass
class Record:
    function: str
    line: int
    op: str
    name: str
    value: Any


class _Recorder:
    """Collects each instruction's results as (function, name, k-th time) -> Record."""

    def __init__(self):
        self.order: list[tuple] = []
        self.records: dict[tuple, Record] = {}
        self._seen: dict[tuple, int] = {}

    def __call__(self, function, line, op, names, values):
        for name, value in zip(names, values):
            base = (function, _align_name(name))
            k = self._seen.get(base, 0)
            self._seen[base] = k + 1
            key = base + (k,)
            self.order.append(key)
            self.records[key] = Record(function, line, op, name, _copy(value))


def _copy(v: Any) -> Any:
    """A value as it is now: arrays copied (a cache's views change later), objects kept as markers."""
    if isinstance(v, np.ndarray):
        return np.array(v, copy=True)
    if isinstance(v, (bool, int, float, str, np.generic)) or v is None:
        return v
    if isinstance(v, list) and all(isinstance(x, int) for x in v):
        return np.asarray(v, np.int64)
    if isinstance(v, tuple):
        return tuple(_copy(x) for x in v)
    return _Object(type(v).__name__)


@dataclass
class _Object:
    type_name: str


@dataclass
class Row:
    """One result of one executed instruction, compared."""
    function: str
    line: int
    op: str
    name: str
    occurrence: int  # the k-th time (from 0) this instruction ran
    text: str        # the IR statement
    shape: str
    max_abs: float
    max_rel: float
    ok: bool
    note: str = ""
    worst: Optional[tuple] = None  # flat index of the largest error, for the values around it


@dataclass
class DiffReport:
    """Every compared result in execution order, and the first past the tolerance."""
    rows: list[Row]
    rtol: float
    atol: float
    left: str
    right: str
    only_left: list[tuple] = field(default_factory=list)   # (function, name, k) run only by the left side
    only_right: list[tuple] = field(default_factory=list)
    values: dict = field(default_factory=dict)  # row index -> (left value, right value), kept for `first`

    @property
    def first(self) -> Optional[Row]:
        return next((r for r in self.rows if not r.ok), None)

    @property
    def first_index(self) -> Optional[int]:
        return next((i for i, r in enumerate(self.rows) if not r.ok), None)

    def table(self, rows: Optional[list[Row]] = None) -> str:
        rows = self.rows if rows is None else rows
        out = [f"{'function:line':<28} {'name':<22} {'op':<14} {'shape':<18} {'max abs':>10} {'max rel':>10}  "]
        for r in rows:
            flag = "" if r.ok else "  <-- past tolerance"
            out.append(f"{_clip(f'{r.function}:{r.line}', 28):<28} {_clip(r.name + (f'#{r.occurrence}' if r.occurrence else ''), 22):<22} "
                       f"{_clip(r.op, 14):<14} {_clip(r.shape, 18):<18} {_num(r.max_abs):>10} {_num(r.max_rel):>10}  "
                       f"{r.note}{flag}")
        return "\n".join(out) + "\n"

    def summary(self) -> str:
        n_bad = sum(not r.ok for r in self.rows)
        worst = max(self.rows, key=lambda r: (r.max_rel if math.isfinite(r.max_rel) else math.inf), default=None)
        lines = [f"{self.left} vs {self.right}: {len(self.rows)} results compared, {n_bad} past tolerance "
                 f"(rtol {self.rtol:g}, atol {self.atol:g})"]
        if worst is not None:
            lines.append(f"largest relative error: {_num(worst.max_rel)} at {worst.function}:{worst.line} {worst.name}")
        if self.only_left or self.only_right:
            lines.append(f"not aligned: {len(self.only_left)} results only in {self.left}, "
                         f"{len(self.only_right)} only in {self.right} (first: "
                         f"{_key(self.only_left[0]) if self.only_left else _key(self.only_right[0])})")
        return "\n".join(lines) + "\n"

    def first_report(self, context: int = 3) -> str:
        i = self.first_index
        if i is None:
            return "no instruction past the tolerance\n"
        r = self.rows[i]
        out = [f"first past tolerance: {r.function}:{r.line}  {r.text}",
               f"  {r.name}{f' (time {r.occurrence + 1})' if r.occurrence else ''}: {r.shape}, max abs {_num(r.max_abs)}, "
               f"max rel {_num(r.max_rel)}{'; ' + r.note if r.note else ''}"]
        vals = self.values.get(i)
        if vals is not None and r.worst is not None:
            out += _around(vals[0], vals[1], r.worst, self.left, self.right)
        lo, hi = max(0, i - context), min(len(self.rows), i + context + 1)
        out.append("instructions around it:")
        out.append(self.table(self.rows[lo:hi]).rstrip("\n"))
        return "\n".join(out) + "\n"

    def __str__(self) -> str:
        return self.summary() + "\n" + self.first_report()


def _key(k: tuple) -> str:
    return f"{k[0]}.{k[1]}" + (f"#{k[2]}" if k[2] else "")


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n - 3] + "..."


def _num(x: float) -> str:
    return "-" if x is None else (f"{x:.3g}" if math.isfinite(x) else str(x))


def _around(a, b, worst: tuple, left: str, right: str, width: int = 3) -> list[str]:
    """The elements next to the largest error, flat, from both sides."""
    path, flat = worst
    for p in path:
        a, b = a[p], b[p]
    a, b = np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)
    lo, hi = max(0, flat - width), min(a.size, flat + width + 1)
    w = max(len(left), len(right))
    where = "".join(f"element {p} of the tuple, " for p in path) + f"flat index {flat}"
    return [f"  values at flat indices {lo}..{hi - 1} (the largest error is at {where}):",
            f"    {left:<{w}} {np.array2string(a[lo:hi], precision=6, max_line_width=200)}",
            f"    {right:<{w}} {np.array2string(b[lo:hi], precision=6, max_line_width=200)}"]


def compare(a: Any, b: Any, rtol: float, atol: float, path: tuple = ()):
    """(max_abs, max_rel, ok, note, shape, worst) of `a` against the reference `b`."""
    if isinstance(a, _Object) or isinstance(b, _Object):
        name = (a if isinstance(a, _Object) else b).type_name
        return 0.0, 0.0, True, f"{name} (not compared)", "object", None
    if isinstance(a, tuple) or isinstance(b, tuple):
        if not (isinstance(a, tuple) and isinstance(b, tuple)) or len(a) != len(b):
            return math.inf, math.inf, False, "a tuple against something else", "tuple", None
        best = (0.0, 0.0, True, "", f"tuple[{len(a)}]", None)
        for i, (x, y) in enumerate(zip(a, b)):
            got = compare(x, y, rtol, atol, path + (i,))
            if not got[2] and best[2] or (got[2] == best[2] and got[1] > best[1]):
                best = (got[0], got[1], got[2], got[3], best[4], got[5])
        return best
    if a is None or b is None or isinstance(a, str) or isinstance(b, str):
        same = (a is None and b is None) or a == b
        return (0.0, 0.0, True, "", type(b).__name__, None) if same else \
            (math.inf, math.inf, False, f"{a!r} vs {b!r}", type(b).__name__, None)
    x, y = np.asarray(a), np.asarray(b)
    shape = f"{y.dtype}{list(y.shape)}"
    if x.shape != y.shape:
        return math.inf, math.inf, False, f"shape {list(x.shape)} vs {list(y.shape)}", shape, None
    if x.size == 0:
        return 0.0, 0.0, True, "", shape, None
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        same = (x64 == y64) | (np.isnan(x64) & np.isnan(y64))
        err = np.where(same, 0.0, np.abs(x64 - y64))
    err = np.where(np.isnan(err), np.inf, err)
    flat = int(np.argmax(err))
    max_abs = float(err.reshape(-1)[flat])
    finite = np.abs(y64[np.isfinite(y64)])
    scale = float(finite.max()) if finite.size else 0.0
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
    ok = max_abs <= atol + rtol * scale
    note = "" if x.dtype == y.dtype else f"dtype {x.dtype} vs {y.dtype}"
    return max_abs, max_rel, ok, note, shape, ((path, flat) if max_abs > 0 else None)


def _open(program):
    from .program import Program, load

    return program if isinstance(program, Program) else load(program)


def diff(program, function: str, *inputs: Any, other=None, rtol: float = 1e-4, atol: float = 1e-5,
         **named: Any) -> DiffReport:
    """Compares every instruction of `function` run on `inputs` (by position or name):
    with `other` None, the C++ VM against the Python replay of `program`; else the
    C++ VM running `program` against it running `other`, aligned by SSA name."""
    from . import ir
    from .inputs import coerce_inputs
    from .replay import Replayer

    a = _open(program)
    fn = a.module.function(function)
    values = coerce_inputs(fn, tuple(inputs_by_name(fn, inputs, named)))
    left = _Recorder()
    _C.run_watched(a.session, function, values, left)
    right = _Recorder()
    if other is None:
        Replayer(a.path, text=a.ir, watch=right).run(function, *values)
        names = ("vm", "replay")
        # the replay is the reference: the VM is measured against it
        test, ref = left, right
    else:
        b = _open(other)
        _C.run_watched(b.session, function, coerce_inputs(b.function(function), tuple(values)), right)
        names = (a.path.name, b.path.name) if a.path.name != b.path.name else (str(a.path), str(b.path))
        test, ref = right, left
    texts = {(f.name, s.line): ir.print_stmt(s) for f in a.module.functions for s in f.body}
    report = DiffReport([], rtol, atol, *names)
    for key in left.order:
        if key not in right.records:
            report.only_left.append(key)
            continue
        l_rec, r_rec = left.records[key], right.records[key]
        t, r = test.records[key].value, ref.records[key].value
        max_abs, max_rel, ok, note, shape, worst = compare(t, r, rtol, atol)
        if l_rec.op != r_rec.op:
            note = (note + "; " if note else "") + f"{l_rec.op} vs {r_rec.op}"
        report.rows.append(Row(l_rec.function, l_rec.line, l_rec.op, l_rec.name, key[2],
                               texts.get((l_rec.function, l_rec.line), ""), shape, max_abs, max_rel, ok,
                               note, worst))
        if not ok and not report.values:  # the first failure's values, for first_report
            report.values[len(report.rows) - 1] = (l_rec.value, r_rec.value)
    report.only_right = [k for k in right.order if k not in left.records]
    return report
