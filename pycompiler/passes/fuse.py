"""Fusions: two ops that each pass over a tensor, replaced by one op that does both in
one pass (the fused ops' kernels are in ops/, their references in reference/ops/fused.py). Written as rewrite rules (rewrite.py) with single_use: a fusion applies only
where the first op's result is read by the second alone, so nothing is computed twice.

    layer_norm(add(x, r), w, b, eps=e)  ->  add_layer_norm(x, r, w, b, eps=e)
    rms_norm(add(x, r), w, eps=e)       ->  add_rms_norm(x, r, w, eps=e)
    silu(linear(x, w, b))               ->  linear_act(x, w, b, "silu")   (and relu, sigmoid, exact gelu)

Each fused op computes exactly what the two ops did (the same float operations in the
same order), so a fused program's results are bit for bit the unfused one's.
"""
from __future__ import annotations

from functools import lru_cache

from .. import ir
from .rewrite import Rule, apply_rules, rule

ACTIVATIONS = ("relu", "sigmoid", "silu", "gelu")  # linear_act's; gelu is the exact one (approximate="none")


def _linear_act_rules(act: str) -> list[Rule]:
    from .. import ops as T

    f = getattr(T, act)
    return [
        rule(lambda x, w, b: f(T.linear(x, w, b)), lambda x, w, b: T.linear_act(x, w, b, act),
             ("Tensor", "Tensor", "Tensor"), f"{act}(linear) -> linear_act", single_use=True),
        rule(lambda x, w: f(T.linear(x, w)), lambda x, w: T.linear_act(x, w, None, act),
             ("Tensor", "Tensor"), f"{act}(linear without bias) -> linear_act", single_use=True),
    ]


@lru_cache(maxsize=1)
def fusion_rules() -> tuple[Rule, ...]:
    from .. import ops as T

    rules = [
        rule(lambda x, r, w, b, eps: T.layer_norm(T.add(x, r), w, b, eps=eps),
             lambda x, r, w, b, eps: T.add_layer_norm(x, r, w, b, eps=eps),
             ("Tensor", "Tensor", "Tensor", "Tensor", "float"), "layer_norm(add) -> add_layer_norm", single_use=True),
        rule(lambda x, r, w, eps: T.rms_norm(T.add(x, r), w, eps=eps),
             lambda x, r, w, eps: T.add_rms_norm(x, r, w, eps=eps),
             ("Tensor", "Tensor", "Tensor", "float"), "rms_norm(add) -> add_rms_norm", single_use=True),
    ]
    for act in ACTIVATIONS:
        rules += _linear_act_rules(act)
    return tuple(rules)


def fuse(module: ir.Module) -> int:
    """Applies the fusion rules in place; returns how many statements were fused."""
    return apply_rules(module, fusion_rules())
