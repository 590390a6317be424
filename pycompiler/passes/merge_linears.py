"""Linears sharing an input, merged into one: the q/k/v projections of self-attention
(and the k/v of cross-attention) read the same x, so

    q = linear(x, param("...q_proj.weight", layer), param("...q_proj.bias", layer))
    k = linear(x, param("...k_proj.weight", layer), param("...k_proj.bias", layer))
    v = linear(x, ...)

becomes one linear over a weight made now, the rows of the three stacked
("...q+k+v_proj.weight" for every layer the weights hold), and a slice per result:

    qkv = linear(x, param("...q+k+v_proj.weight", layer), param("...q+k+v_proj.bias", layer))
    q = slice(qkv, -1, 0, 512)   ...

One weight stream, one instruction and one split of the output features over the
threads instead of three. Each output feature is the same dot product as before (the
linear kernels compute every output column alone), so the results are unchanged; the
oneDNN GEMM (ops/gemm_library.h) is called on fixed blocks of 256 output columns, whose
shape could change its rounding, so only linears whose widths are multiples of 256 merge.

This pass changes the weights, so it takes them: `MergeLinears(weights)` adds the merged
tensors to the mapping; `weights_read` tells which weights a program still reads.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import MutableMapping

import numpy as np

from .. import ir
from .dce import stmt_uses


def _param_template(s) -> tuple[str, tuple] | None:
    """(template, index expressions) of `param("name")` / `param("t{}", i)`, else None."""
    if not isinstance(s, ir.Assign) or s.callee != "param" or s.kwargs or not s.args or \
            not isinstance(s.args[0], str) or len(s.args) > 2:
        return None
    return s.args[0], tuple(s.args[1:])


def _names(template: str, weights) -> dict:
    """index (None for a plain name) -> weight name, for what `param(template, ...)` can read
    (the loader's rule: the hole is a decimal index without leading zeros)."""
    if "{}" not in template:
        return {None: template} if template in weights else {}
    pre, post = template.split("{}", 1)
    pat = re.compile(re.escape(pre) + r"(0|[1-9][0-9]{0,5})" + re.escape(post) + r"\Z")
    return {int(m.group(1)): n for n in weights if (m := pat.match(n))}


def weights_read(module: ir.Module, weights) -> list[str]:
    """The names of the weights `module`'s param statements can read, in `weights`' order."""
    used: set = set()
    for f in module.functions:
        for s in f.body:
            t = _param_template(s)
            if t is not None:
                used.update(_names(t[0], weights).values())
    return [n for n in weights if n in used]


def _merged_template(templates: list[str]) -> str | None:
    """'p.q_proj.w', 'p.k_proj.w' -> 'p.q+k_proj.w': the common prefix and suffix kept, the
    parts that differ joined by '+' (None when a differing part holds the hole)."""
    pre = templates[0]
    for t in templates[1:]:
        while not t.startswith(pre):
            pre = pre[:-1]
    post = templates[0][len(pre):]
    for t in templates[1:]:
        while not t[len(pre):].endswith(post):
            post = post[1:]
    mids = [t[len(pre):len(t) - len(post)] for t in templates]
    if any("{}" in m or not m for m in mids):
        return None
    return pre + "+".join(mids) + post


# ops/gemm_library.h's kLibraryGemmColumns: merged widths stay whole blocks of it.
LIBRARY_COLUMNS = 256


class MergeLinears:
    """A pass (PassManager) that merges linears reading the same input; it adds the
    merged weights to `weights` (name -> array)."""

    takes_weights = True

    def __init__(self, weights: MutableMapping):
        self.weights = weights
        self.made: set = set()  # merged templates this pass made (another function may share them)

    def __call__(self, module: ir.Module) -> int:
        merged = 0
        for f in module.functions:
            while (group := self._group(f)) is not None:
                self._rewrite(f, *group)
                merged += len(group[0]) - 1
        return merged

    def _group(self, f: ir.Function):
        """The first set of 2+ mergeable linears of `f`: (linear statements, their weight
        templates, their bias templates or None, the param index expressions)."""
        params = {s.targets[0]: (i, _param_template(s)) for i, s in enumerate(f.body) if _param_template(s)}
        # A linear nothing reads is left for dce: fuse leaves the linear it folded into a
        # linear_act in place until then, and merging it would bring its columns back
        # (Qwen's gate_proj computed twice, once in gate+up and once in the linear_act).
        used = {n for s in f.body for n in stmt_uses(s)}
        groups = defaultdict(list)
        for i, s in enumerate(f.body):
            if not (isinstance(s, ir.Assign) and s.callee == "linear" and not s.kwargs and len(s.args) in (2, 3)
                    and s.targets[0] in used
                    and len(s.targets) == 1 and isinstance(s.args[0], ir.Name) and isinstance(s.args[1], ir.Name)
                    and s.args[1].id in params):
                continue
            bias = s.args[2] if len(s.args) == 3 else None
            if bias is not None and not (isinstance(bias, ir.Name) and bias.id in params):
                continue
            w_template, index = params[s.args[1].id][1]
            b_template = params[bias.id][1] if bias is not None else None
            if b_template is not None and b_template[1] != index:
                continue
            key = (s.args[0].id, tuple(repr(e) for e in index), b_template is None)
            groups[key].append((i, s, w_template, b_template[0] if b_template else None, index))
        for members in groups.values():
            members = [m for m in members if self._whole_blocks(m[2])]
            if len(members) < 2:
                continue
            found = self._mergeable(f, members, params)
            if found is not None:
                return found
        return None

    def _whole_blocks(self, template: str) -> bool:
        """Whether every weight `template` names has a multiple of LIBRARY_COLUMNS rows."""
        table = _names(template, self.weights)
        return bool(table) and all(np.asarray(self.weights[n]).ndim == 2 and
                                   np.asarray(self.weights[n]).shape[0] % LIBRARY_COLUMNS == 0 for n in table.values())

    def _mergeable(self, f, members, params):
        w_templates = [m[2] for m in members]
        b_templates = [m[3] for m in members] if members[0][3] is not None else None
        if len(set(w_templates)) != len(w_templates):
            return None
        w_name = _merged_template(w_templates)
        b_name = _merged_template(b_templates) if b_templates else None
        if w_name is None or (b_templates and b_name is None):
            return None
        if w_name not in self.made and _names(w_name, self.weights):
            return None  # a weight of that name exists and is not ours
        # Every index the weights hold for one template they hold for all, with one input
        # width, 2-D weights of one dtype linear takes (f32, f16, bf16: stacking 16-bit rows
        # keeps them as they are) and matching f32 biases, and the same output widths.
        tables = [_names(t, self.weights) for t in w_templates]
        btables = [_names(t, self.weights) for t in b_templates] if b_templates else None
        if not tables[0] or any(set(t) != set(tables[0]) for t in tables + (btables or [])):
            return None
        widths = None
        for idx in tables[0]:
            ws = [np.asarray(self.weights[t[idx]]) for t in tables]
            if ws[0].dtype.name not in ("float32", "float16", "bfloat16") or any(
                    w.dtype != ws[0].dtype or w.ndim != 2 or w.shape[1] != ws[0].shape[1] for w in ws):
                return None
            if btables and any(np.asarray(self.weights[b[idx]]).shape != (w.shape[0],) or
                               np.asarray(self.weights[b[idx]]).dtype != np.float32 for b, w in zip(btables, ws)):
                return None
            if widths not in (None, [w.shape[0] for w in ws]):
                return None
            widths = [w.shape[0] for w in ws]
        # The index expressions must be readable where the first linear stands.
        first = members[0][0]
        defined = {p.name for p in f.params} | {t for s in f.body[:first] if isinstance(s, ir.Assign) for t in s.targets}
        index = members[0][4]
        if any(isinstance(e, ir.Name) and e.id not in defined for e in index):
            return None
        return [m[1] for m in members], (w_name, tables), (b_name, btables), index, widths

    def _rewrite(self, f, linears, w, b, index, widths):
        (w_name, tables), (b_name, btables) = w, b
        for idx in tables[0] if w_name not in self.made else ():
            key = w_name if idx is None else w_name.replace("{}", str(idx))
            self.weights[key] = np.ascontiguousarray(np.concatenate([np.asarray(self.weights[t[idx]]) for t in tables]))
            if btables:
                key = b_name if idx is None else b_name.replace("{}", str(idx))
                self.weights[key] = np.concatenate([np.asarray(self.weights[t[idx]]) for t in btables])
        self.made.add(w_name)
        taken = {p.name for p in f.params} | {t for s in f.body if isinstance(s, ir.Assign) for t in s.targets}
        first = linears[0].targets[0]

        def fresh(base):
            n = 0
            while f"{base}_{n}" in taken:
                n += 1
            taken.add(f"{base}_{n}")
            return f"{base}_{n}"

        x = linears[0].args[0]
        wv, out = fresh("merged_weight"), fresh("merged_linear")
        new = [ir.Assign([wv], "param", [w_name, *index], [], False, 0)]
        args = [x, ir.Name(wv)]
        if btables:
            bv = fresh("merged_bias")
            new.append(ir.Assign([bv], "param", [b_name, *index], [], False, 0))
            args.append(ir.Name(bv))
        new.append(ir.Assign([out], "linear", args, [], False, 0))
        start = 0
        for s, width in zip(linears, widths):
            new.append(ir.Assign(list(s.targets), "slice", [ir.Name(out), -1, start, start + width], [], False, 0))
            start += width
        gone = {id(s) for s in linears}
        body = []
        for s in f.body:
            if isinstance(s, ir.Assign) and s.targets[0] == first:
                body += new
            elif id(s) not in gone:
                body.append(s)
        f.body = body
