"""The quantization schemes of `import_hf(..., quantize=)` in one table: for each, how a
linear layer's weight is stored and which op runs it, and how a *table* is stored and
which ops read it. A table is a token-embedding matrix or the output projection (often
one tied matrix, stored once): the embedding op gathers a few of its rows per step and
the logits read all of it, so it needs a layout both can read (w8a8's VNNI packing has
no row gather, so w8a8 stores tables as int8 rows and runs the logits with linear_int8;
a decode step's logits are 1-few rows, where linear_int8 streams the rows anyway).

    plan = Plan(scheme, weights, group_size=None, keep_f32=())
    layers.linear(plan, x, "model.layers.{}.mlp.up_proj", layer)   # models/layers.py
    layers.embed(plan, ids, "model.embed_tokens.weight")
    layers.output_projection(plan, x, "lm_head.weight")

The plan quantizes a weight the first time the traced program asks for it (the
builder's weights dict gains `<name>.<suffix>` and `<name>.scale`; the exporter writes
only what the program reads, so the f32 original of a quantized matrix is not written).
Position tables, norms and biases stay f32 (small; see docs/quantization.md).
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from . import ops as T
from .quantize import QUANTIZATIONS, pack_w8a8, quantize_int4, quantize_int8
from .unsupported import UnsupportedConfig

DEFAULT_GROUP_SIZE = 32
MAX_GROUP_SIZE = 4096


@dataclass(frozen=True)
class Storage:
    """One way of storing a matrix [out, in]: its tensors are `<name>.<suffix>` (and
    `<name>.scale` when `scaled`), made by store(w, group_size) -> (weight, scale or None)."""
    suffix: str
    store: Callable
    linear: str  # the op of x @ W^T + b: op(x, weight, [scale,] bias)
    embed: Optional[str]  # the op gathering rows: op(ids, weight, [scale]); None: not a table layout
    scaled: bool = True
    grouped: bool = False  # store takes the group size (int4)
    features: bool = False  # the embed op also takes the table's width (int4 rows are padded to the group)


@dataclass(frozen=True)
class Scheme:
    name: str
    matrix: Storage  # the linear layers
    table: Storage  # token embeddings and the output projection (tied or not)

    @property
    def doc(self) -> str:
        return QUANTIZATIONS[self.name]

    def ops(self) -> set:
        return {self.matrix.linear, self.table.linear, self.table.embed}


def _int8(w, _group_size):
    return quantize_int8(w)


def _w8a8(w, _group_size):
    q, s = quantize_int8(w)
    return pack_w8a8(q), s


def _int4(w, group_size):
    # f16 scales as llama.cpp's q4_0 (4.5 bits a weight at G=32, not 5); f32 for a matrix
    # with a group scale (its max |w| / 8) that f16 would overflow or make subnormal
    q, s = quantize_int4(w, group_size, np.float32)
    a = np.abs(s)
    nz = a[a > 0]
    if nz.size and (nz.max() > np.finfo(np.float16).max or nz.min() < np.finfo(np.float16).tiny):
        return q, s
    return quantize_int4(w, group_size, np.float16)


def _f16(w, _group_size):
    w = np.asarray(w, np.float32)
    if w.size and np.abs(w).max() > np.finfo(np.float16).max:
        raise ValueError(f"a value of magnitude {np.abs(w).max():g} does not fit f16 (at most 65504): "
                         "use bf16, or keep_f32 for this matrix")
    return w.astype(np.float16), None


def _bf16(w, _group_size):
    import ml_dtypes  # a dependency since the 16-bit dtypes (pyproject)

    return np.asarray(w, np.float32).astype(ml_dtypes.bfloat16), None


# 16-bit: no new op, linear and embedding read f16/bf16 weights and widen them in the kernel
F16 = Storage("f16", _f16, "linear", "embedding", scaled=False)
BF16 = Storage("bf16", _bf16, "linear", "embedding", scaled=False)
INT8 = Storage("int8", _int8, "linear_int8", "embedding_int8")
W8A8 = Storage("w8a8", _w8a8, "linear_w8a8", None)
INT4 = Storage("int4", _int4, "linear_int4", "embedding_int4", grouped=True, features=True)
# w4a8: the same int4 weights, int8 activations; its tables too (the logits' op: see docs/quantization.md)
W4A8 = Storage("int4", _int4, "linear_w4a8", "embedding_int4", grouped=True, features=True)

SCHEMES = {
    "int8": Scheme("int8", INT8, INT8),
    "w8a8": Scheme("w8a8", W8A8, INT8),
    # 4-bit layers, 8-bit tables by default (docs/quantization.md's table: an int4 table costs
    # a quarter of the 4-bit loss for 8% of the bytes); `tables="int4"` (or "w4a8") for all 4-bit
    "int4": Scheme("int4", INT4, INT8),
    "w4a8": Scheme("w4a8", W4A8, INT8),
    "f16": Scheme("f16", F16, F16),
    "bf16": Scheme("bf16", BF16, BF16),
}


def with_tables(base: Scheme, other: Scheme) -> Scheme:
    """`base`'s linear layers with tables stored as `other` stores a matrix (its linear
    layers' storage where that has a row gather, else its tables': w8a8 -> int8 rows), e.g.
    int4 layers with all-4-bit tables (tables="int4"), or with f16 ones."""
    return Scheme(base.name, base.matrix, other.matrix if other.matrix.embed else other.table)


def scheme(name: str, where: str = "import_hf") -> Scheme:
    """The scheme called `name`, or ValueError listing the ones there are."""
    if name not in SCHEMES:
        raise ValueError(f"{where}: {'quantize=' if where == 'import_hf' else ''}{name!r} is not supported "
                         f"(None, {', '.join(repr(q) for q in SCHEMES)})")
    return SCHEMES[name]


def check_group_size(scheme_: Scheme, group_size, where: str = "import_hf"):
    """The group size to use: the default for a grouped scheme when None; an error for a
    scheme without groups, or a size that is not a positive multiple of 32 up to MAX_GROUP_SIZE."""
    grouped = scheme_.matrix.grouped or scheme_.table.grouped
    if group_size is None:
        return DEFAULT_GROUP_SIZE if grouped else None
    if not grouped:
        raise ValueError(f"{where}: group_size applies to the 4-bit schemes, not quantize={scheme_.name!r}")
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)):
        raise ValueError(f"{where}: group_size must be an int, got {group_size!r}")
    if group_size <= 0 or group_size % 32 or group_size > MAX_GROUP_SIZE:
        raise ValueError(f"{where}: group_size {group_size} must be a multiple of 32 in [32, {MAX_GROUP_SIZE}]")
    return int(group_size)


def _instances(template: str, weights: dict) -> list:
    """The stored names a param template ("model.layers.{}.x.weight") stands for."""
    if "{}" not in template:
        return [template] if template in weights else []
    pat = re.compile(re.escape(template).replace(re.escape("{}"), "(0|[1-9][0-9]*)") + r"\Z")
    return sorted(k for k in weights if pat.match(k))


@dataclass
class Plan:
    """Which storage every matrix of one import gets, deciding (and quantizing) each the
    first time the traced program reads it. keep_f32: fnmatch patterns of weight names
    left f32."""
    scheme: Scheme
    weights: dict
    group_size: Optional[int] = None
    keep_f32: tuple = ()
    linears: Optional[set] = None  # the matrices linear() may quantize (the Architecture's linear_weights); None: all
    matched: set = field(default_factory=set)  # the keep_f32 patterns some matrix matched
    decided: dict = field(default_factory=dict)  # template -> Storage or None

    def storage(self, template: str, table: bool) -> Optional[Storage]:
        """The storage of the matrix `template` (a layer template's instances share one op, so
        they must all be kept f32 or none), quantizing it on first use; None: stays f32."""
        if template in self.decided:
            return self.decided[template]
        names = _instances(template, self.weights)
        kept = [n for n in names if self._kept(n)]
        if kept and len(kept) != len(names):
            raise UnsupportedConfig(f"import_hf: keep_f32 matches {kept[0]} but not every layer of {template} "
                             "(a layer's op is shared by all layers): match them all or none")
        listed = table or self.linears is None or all(n in self.linears for n in names)
        st = None if kept or not names or not listed else (self.scheme.table if table else self.scheme.matrix)
        if st is not None:
            for n in names:
                try:
                    q, s = st.store(self.weights[n], self.group_size)
                except ValueError as e:
                    raise UnsupportedConfig(f"import_hf: quantize={self.scheme.name!r}: {n}: {e}") from None
                self.weights[f"{n}.{st.suffix}"] = q
                if s is not None:
                    self.weights[f"{n}.scale"] = s
        self.decided[template] = st
        return st

    def features(self, name: str) -> int:
        """The width of the table `name` before quantization."""
        return int(self.weights[name].shape[1])

    def _kept(self, name: str) -> bool:
        hits = [p for p in self.keep_f32 if fnmatch.fnmatchcase(name, p)]
        self.matched.update(hits)
        return bool(hits)

    def unmatched(self) -> list:
        """The keep_f32 patterns that matched no matrix the program reads."""
        return [p for p in self.keep_f32 if p not in self.matched]


def _plan(quantize) -> Optional[Plan]:
    """A model file's `quantize` argument as a Plan: None (f32), a Plan, or a scheme name
    (every matrix quantized: how plugins written before Plan call linear)."""
    if quantize is None or isinstance(quantize, Plan):
        return quantize
    return _NamePlan(scheme(quantize, "linear"))


@dataclass
class _NamePlan:
    """A scheme name given where a Plan goes: the weights were stored by the caller."""
    scheme: Scheme

    def storage(self, template: str, table: bool) -> Storage:
        return self.scheme.table if table else self.scheme.matrix

    def features(self, name: str) -> int:
        raise ValueError(f"embed: the width of the 4-bit table {name} is unknown: pass the import's Plan, "
                         "not a scheme name")


def _args(st: Storage, name: str, layer):
    w = T.param(f"{name}.{st.suffix}", layer)
    return (w, T.param(f"{name}.scale", layer)) if st.scaled else (w,)


def linear_op(quantize, x, name: str, layer=None, b=(), table: bool = False):
    """x @ W^T (+ bias) for the matrix `name` as `quantize` stored it (table: the output
    projection, stored as a table); `b`: the op's trailing bias arguments, as the caller
    spelled them before schemes (a None bias or none at all: the IR text stays the same)."""
    plan = _plan(quantize)
    st = None if plan is None else plan.storage(name, table)
    if st is None:
        return T.linear(x, T.param(name, layer), *b)
    return getattr(T, st.linear)(x, *_args(st, name, layer), *b)


def embed_op(quantize, ids, name: str):
    """Rows of the token table `name` as `quantize` stored it."""
    plan = _plan(quantize)
    st = None if plan is None else plan.storage(name, True)
    if st is None:
        return T.embedding(ids, T.param(name))
    extra = (plan.features(name),) if st.features else ()
    return getattr(T, st.embed)(ids, *_args(st, name, None), *extra)
