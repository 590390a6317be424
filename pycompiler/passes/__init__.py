"""Graph passes over a program (an ir.Module) before it is written: dead-code
elimination, common-subexpression elimination, constant folding, fusions (fuse.py),
and, given the weights, linears sharing an input merged into one (merge_linears.py); a
pass manager runs them to a fixpoint. Each keeps what the program computes: tests replay programs
before and after on the reference ops (docs/tools.md, "Graph passes")."""
from __future__ import annotations

import copy
from pathlib import Path
from dataclasses import dataclass, field
from typing import Callable

from .. import ir
from .cse import cse
from .dce import dce
from .fold import fold
from .fuse import fuse, fusion_rules
from .merge_linears import MergeLinears, weights_read
from .rewrite import Rule, apply_rules, rewrite_pass, rule, standard_rules

Pass = Callable[[ir.Module], int]  # changes the module in place, returns how many changes it made

DEFAULT_PASSES: tuple[tuple[str, Pass], ...] = (("fold", fold), ("cse", cse), ("dce", dce), ("fuse", fuse))



def default_passes(weights=None) -> list:
    """DEFAULT_PASSES, and MergeLinears when the program's weights are given (name -> array;
    the merged weights are added to it)."""
    return list(DEFAULT_PASSES) + ([("merge", MergeLinears(weights))] if weights is not None else [])


@dataclass
class PassStats:
    before: int  # statements (assignments) in the module
    after: int
    removed: dict = field(default_factory=dict)  # pass name -> statements it removed (rewrite: rules applied)
    rounds: int = 0


def count_statements(module: ir.Module) -> int:
    return sum(isinstance(s, ir.Assign) for f in module.functions for s in f.body)


class PassManager:
    """Runs passes in order, round after round, until a round changes nothing."""

    def __init__(self, passes=DEFAULT_PASSES, max_rounds: int = 10):
        self.passes = list(passes)
        self.max_rounds = max_rounds

    def run(self, module: ir.Module) -> tuple[ir.Module, PassStats]:
        """A new module (the argument is left as it was) and what each pass removed."""
        module = copy.deepcopy(module)
        stats = PassStats(count_statements(module), 0, {name: 0 for name, _ in self.passes})
        for _ in range(self.max_rounds):
            stats.rounds += 1
            changed = 0
            for name, p in self.passes:
                n = p(module)
                stats.removed[name] += n
                changed += n
            if not changed:
                break
        stats.after = count_statements(module)
        return module, stats


def optimize(module: ir.Module, passes=DEFAULT_PASSES) -> tuple[ir.Module, PassStats]:
    return PassManager(passes).run(module)


def optimize_program(text: str, weights) -> tuple[str, dict]:
    """Program text and its weights (name -> array) after default_passes: the new text,
    and the weights it reads (merged ones included; `weights` is left as it was)."""
    from ..replay import check

    weights = dict(weights)
    module, _ = optimize(check(text), default_passes(weights))
    return str(module), {n: weights[n] for n in weights_read(module, weights)}


def optimize_dir(src, dst, passes=None) -> PassStats:
    """Writes the program directory `src` with its program optimized to `dst`
    (atomically; the same meta, and the weights the new program reads). `passes`: (name,
    pass) pairs, default default_passes(); a pass given as a class that takes weights
    (MergeLinears) is made with the program's. The new text is checked as replay would run
    it before it is written."""
    from .. import weights_io
    from ..program_dir import PROGRAM_FILE, WEIGHTS_FILE, read_meta, read_program_text, write_program_dir
    from ..replay import check

    src = Path(src)
    weights, _ = weights_io.read(src / WEIGHTS_FILE)
    passes = default_passes(weights) if passes is None else \
        [(n, p(weights) if getattr(p, "takes_weights", False) and isinstance(p, type) else p) for n, p in passes]
    out, stats = optimize(check(read_program_text(src), filename=str(src / PROGRAM_FILE)), passes)
    text = str(out)
    check(text, filename=str(Path(dst) / PROGRAM_FILE))
    meta = {k: v for k, v in read_meta(src).items() if k not in ("format", "version")}
    write_program_dir(dst, text, {n: weights[n] for n in weights_read(out, weights)}, meta)
    return stats


__all__ = ["PassManager", "PassStats", "optimize", "dce", "cse", "fold", "DEFAULT_PASSES", "count_statements",
           "optimize_dir", "optimize_program", "fuse", "fusion_rules", "MergeLinears", "weights_read", "default_passes", "Rule", "rule", "apply_rules", "rewrite_pass", "standard_rules"]
