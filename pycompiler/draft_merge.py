"""A draft model merged into its target's program (speculative decoding, docs/generation.md).

import_hf builds the draft as a program of its own, then, before the graph passes:
every draft function reachable from the roles the search calls is renamed `draft__NAME`
(calls, cond / while_loop function arguments), its weights `draft.NAME`, and each of
the target's stubs (generation/draft.py: `draft_decode_block`, ...) gets a body that
calls the draft's function of that role; `draft_present` returns True. The stubs keep
their signatures, so the search traced against them is unchanged.
"""
from __future__ import annotations

import dataclasses

from . import ir
from .generation.draft import PREFIX, PRESENT, WEIGHTS, stub_roles
from .importers import UnsupportedConfig
from .passes.merge_linears import weights_read
from .replay import check

# meta.json entries a draft must share with its target: the tokens it proposes are the target's
SHARED = ("is_encoder_decoder", "vocab_size", "decoder_vocab_size", "eos_token_id", "pad_token_id",
          "decoder_start_token_id")


def check_compatible(target_meta: dict, draft_meta: dict):
    """Refuses a draft whose vocabulary or special tokens differ from the target's."""
    for key in SHARED:
        if target_meta.get(key) != draft_meta.get(key):
            raise UnsupportedConfig(f"import_hf: the draft model's {key} is {draft_meta.get(key)!r}, the target's "
                                    f"{target_meta.get(key)!r}: a draft must share the target's vocabulary and "
                                    "special tokens")


def _rename_expr(e, names):
    if isinstance(e, ir.Name) and e.id in names:
        return ir.Name(PREFIX + e.id)
    return e


def _renamed(f: ir.Function, names: set) -> ir.Function:
    body = []
    for s in f.body:
        if isinstance(s, ir.Assign):
            args = [_rename_expr(a, names) for a in s.args]
            if s.callee == "param" and args and isinstance(args[0], str):
                args[0] = WEIGHTS + args[0]
            s = dataclasses.replace(s, callee=PREFIX + s.callee if s.callee in names else s.callee, args=args,
                                    kwargs=[(k, _rename_expr(v, names)) for k, v in s.kwargs])
        else:
            s = dataclasses.replace(s, values=[_rename_expr(v, names) for v in s.values])
        body.append(s)
    return dataclasses.replace(f, name=PREFIX + f.name, body=body)


def _reachable(module: ir.Module, roots) -> list[str]:
    names = set(module.function_names)
    seen, todo = set(), list(roots)
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        for s in module.function(n).body:
            if isinstance(s, ir.Assign):
                todo += [s.callee] if s.callee in names else []
                todo += [a.id for a in s.args if isinstance(a, ir.Name) and a.id in names]
    return [n for n in module.function_names if n in seen]


def _forwarding(stub: ir.Function, callee: str) -> ir.Function:
    """The stub's signature, a body that calls `callee` with its parameters."""
    outs = [f"out_{i}" for i in range(len(stub.return_types))]
    call = ir.Assign(outs, callee, [ir.Name(p.name) for p in stub.params], unpack=stub.returns_tuple and len(outs) == 1)
    return dataclasses.replace(stub, body=[call, ir.Return([ir.Name(o) for o in outs])])


def merge_draft(text: str, weights: dict, draft_text: str, draft_weights: dict) -> tuple[str, dict]:
    """The target program `text` with the draft program merged in, and the weights both read."""
    target, draft = check(text), check(draft_text)
    decoder_only = target.get("draft_encode") is None
    roles = stub_roles(decoder_only)
    missing = [r for r in roles if draft.get(r) is None]
    if missing or target.get(PRESENT) is None:
        raise UnsupportedConfig(f"import_hf: cannot merge the draft: it lacks {missing or roles} or the target has "
                                "no draft stubs")
    keep = _reachable(draft, roles)
    names = set(draft.function_names)
    if any(PREFIX + n in target.function_names for n in keep):
        raise UnsupportedConfig("import_hf: the target program already has draft functions")
    functions = []
    for f in target.functions:
        if f.name == PRESENT:
            f = dataclasses.replace(f, body=[ir.Assign(["present"], "eq", [0, 0]), ir.Return([ir.Name("present")])])
        elif f.name.startswith("draft_") and f.name[len("draft_"):] in roles:
            f = _forwarding(f, PREFIX + f.name[len("draft_"):])
        functions.append(f)
    functions += [_renamed(draft.function(n), names) for n in keep]
    merged = ir.Module(functions)
    every = {**weights, **{WEIGHTS + n: w for n, w in draft_weights.items()}}
    return str(merged), {n: every[n] for n in weights_read(merged, every)}
