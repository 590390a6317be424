"""Pattern -> replacement rules, written in the same Python as model code.

    log_softmax_rule = rule(lambda x, dim: T.log(T.softmax(x, dim)),
                            lambda x, dim: T.log_softmax(x, dim), types=("Tensor", "int"))

Both functions are traced (ProgramBuilder) into IR. Wherever a function of the
program computes the pattern's result (the pattern's statements, matched from its
last one back through the names they read, parameters binding to any argument, the
same argument each time they appear, literals equal with their type), the statement
computing that result is replaced by the replacement's statements; the pattern's
other statements are left for DCE, which removes them when nothing else reads them.
Only pure ops may appear in a pattern (effects.py). A rule made with single_use=True
(a fusion) matches only where nothing but the pattern reads the pattern's other results:
elsewhere the replacement would compute them a second time.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

from .. import ir
from .cse import _key
from .dce import stmt_uses
from .effects import Effects, pure_ops


@dataclass
class Rule:
    name: str
    params: list[str]
    pattern: list[ir.Assign]      # the last one computes the result
    replacement: list[ir.Assign]
    result: ir.Expr               # what the replacement returns
    single_use: bool = False      # the pattern's inner results may be read by the pattern only


def _trace(fn: Callable, types: Sequence[str], name: str) -> ir.Function:
    import inspect

    from ..builder import ProgramBuilder

    params = list(inspect.signature(fn).parameters)
    pb = ProgramBuilder()
    pf = pb.function(fn, arg_types=list(types), name=name)
    pf.ensure_traced()
    out = pb.program().function(pf.name)
    if [p.name for p in out.params] != params:
        raise ValueError(f"rule {name}: could not trace the function with parameters {params}")
    return out


def rule(pattern: Callable, replacement: Callable, types: Sequence[str], name: str = "",
         single_use: bool = False) -> Rule:
    """A rule from two functions of the same parameters (`types`: their IR types)."""
    name = name or getattr(pattern, "__name__", "rule").strip("<>")
    p = _trace(pattern, types, "pattern")
    r = _trace(replacement, types, "replacement")
    ops = pure_ops()
    body = [s for s in p.body if isinstance(s, ir.Assign)]
    impure = [s.callee for s in body if s.callee not in ops]
    if impure:
        raise ValueError(f"rule {name}: a pattern may only use pure ops, not {impure[0]}")
    ret = p.body[-1]
    if not body or not isinstance(ret, ir.Return) or len(ret.values) != 1 or \
            not isinstance(ret.values[0], ir.Name) or ret.values[0].id != body[-1].targets[0] or len(body[-1].targets) != 1:
        raise ValueError(f"rule {name}: the pattern must return the one result of its last op")
    rret = r.body[-1]
    if not isinstance(rret, ir.Return) or len(rret.values) != 1:
        raise ValueError(f"rule {name}: the replacement must return one value")
    return Rule(name, [q.name for q in p.params], body, [s for s in r.body if isinstance(s, ir.Assign)], rret.values[0],
                single_use)


class _Matcher:
    def __init__(self, rule: Rule, defs: dict):
        self.rule = rule
        self.defs = defs  # program name -> (statement, index of the target)
        self.pdefs = {t: (s, i) for s in rule.pattern for i, t in enumerate(s.targets)}
        self.bound: dict = {}
        self.inner: list = []  # (pattern statement, program statement) below the root

    def stmt(self, ps: ir.Assign, s: ir.Assign) -> bool:
        if (s.callee != ps.callee or len(s.args) != len(ps.args) or len(s.targets) != len(ps.targets)
                or s.unpack != ps.unpack or [k for k, _ in s.kwargs] != [k for k, _ in ps.kwargs]):
            return False
        pairs = list(zip(ps.args, s.args)) + [(pv, v) for (_, pv), (_, v) in zip(ps.kwargs, s.kwargs)]
        return all(self.expr(pe, e) for pe, e in pairs)

    def expr(self, pe, e) -> bool:
        if isinstance(pe, ir.Name):
            if pe.id in self.rule.params:
                if pe.id in self.bound:
                    return _key(self.bound[pe.id]) == _key(e)
                self.bound[pe.id] = e
                return True
            if not isinstance(e, ir.Name) or e.id not in self.defs:
                return False
            (ps, pi), (s, i) = self.pdefs[pe.id], self.defs[e.id]
            if pi != i or not self.stmt(ps, s):
                return False
            self.inner.append((ps, s))
            return True
        if isinstance(pe, ir.IntList):
            return isinstance(e, ir.IntList) and len(pe.items) == len(e.items) and \
                all(self.expr(a, b) for a, b in zip(pe.items, e.items))
        return _key(pe) == _key(e)


def _read_only_inside(r: Rule, inner: list, uses: Counter) -> bool:
    """Whether the program reads each matched inner result as often as the pattern does
    (so nothing outside the match reads it)."""
    pattern_uses = Counter(n for s in r.pattern for n in stmt_uses(s))
    return all(uses[t] == pattern_uses[pt] for ps, s in {id(s): (ps, s) for ps, s in inner}.values()
               for pt, t in zip(ps.targets, s.targets))


def _fresh(base: str, taken: set) -> str:
    n = 0
    while f"{base}_{n}" in taken:
        n += 1
    taken.add(f"{base}_{n}")
    return f"{base}_{n}"


def _subst(e, names: dict):
    if isinstance(e, ir.Name):
        return names.get(e.id, e)
    if isinstance(e, ir.IntList):
        return ir.IntList(tuple(_subst(i, names) for i in e.items))
    return e


def apply_rules(module: ir.Module, rules: Sequence[Rule]) -> int:
    """Rewrites every match in place; returns how many."""
    effects = Effects(module)
    rewrites = 0
    for f in module.functions:
        taken = {p.name for p in f.params} | {t for s in f.body if isinstance(s, ir.Assign) for t in s.targets}
        defs = {p.name: None for p in f.params}
        uses = Counter(n for s in f.body for n in stmt_uses(s))
        names: dict = {}  # a replaced result that is now another expression
        body = []
        for s in f.body:
            if isinstance(s, ir.Return):
                s.values = [_subst(v, names) for v in s.values]
                body.append(s)
                continue
            s.args = [_subst(a, names) for a in s.args]
            s.kwargs = [(k, _subst(v, names)) for k, v in s.kwargs]
            new = None
            if effects.pure(s) and len(s.targets) == 1:
                for r in rules:
                    m = _Matcher(r, {k: v for k, v in defs.items() if v is not None})
                    if m.stmt(r.pattern[-1], s) and (not r.single_use or _read_only_inside(r, m.inner, uses)):
                        new = _instantiate(r, m.bound, s.targets[0], taken, names)
                        if new is not None:
                            break
            if new is None:
                body.append(s)
                for i, t in enumerate(s.targets):
                    defs[t] = (s, i)
                continue
            rewrites += 1
            body += new
            for n in new:
                for i, t in enumerate(n.targets):
                    defs[t] = (n, i)
        f.body = body
    return rewrites


def _instantiate(r: Rule, bound: dict, target: str, taken: set, names: dict):
    """The replacement's statements for one match, its result named `target`; None if
    the result cannot stand where the target's name is read."""
    local = dict(bound)
    out = []
    for s in r.replacement:
        targets = []
        for t in s.targets:
            name = target if isinstance(r.result, ir.Name) and r.result.id == t else _fresh(t, taken)
            local[t] = ir.Name(name)
            targets.append(name)
        args = [_subst(a, local) for a in s.args]
        kwargs = [(k, _subst(v, local)) for k, v in s.kwargs]
        out.append(ir.Assign(targets, s.callee, args, kwargs, s.unpack, 0))
    if not any(target in s.targets for s in out):
        value = _subst(r.result, local)
        if not isinstance(value, ir.Name):
            return None  # a literal result cannot go everywhere a name can (in a list, say)
        names[target] = value
    return out


def rewrite_pass(rules: Sequence[Rule]):
    """A pass for PassManager that applies `rules`."""
    def rewrite(module: ir.Module) -> int:
        return apply_rules(module, rules)
    return rewrite


def standard_rules() -> list[Rule]:
    """The rules `tensorvm optimize --passes ...,rewrite,...` applies."""
    from .. import ops as T

    return [
        rule(lambda x, dim: T.log(T.softmax(x, dim)), lambda x, dim: T.log_softmax(x, dim),
             ("Tensor", "int"), "log(softmax) -> log_softmax"),
        rule(lambda x, a, b: T.transpose(T.transpose(x, a, b), a, b), lambda x, a, b: x,
             ("Tensor", "int", "int"), "transpose twice -> nothing"),
    ]
