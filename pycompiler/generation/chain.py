"""The `process` program function: the processor chain (processors.py) over one
step's scores, the sampling warpers in a cond of their own, each processor with a
`when` in a cond so that an option left off costs one test per step."""
from __future__ import annotations

from .. import ops as T
from ..control import cond
from . import processors as P
from .branches import named


def proc_options(p, consts, values):
    """Processor p's options: its import-time constants, then its run-time `values` in the
    order of p.options (what p.when and p.fn read)."""
    return P.Options((*consts, *p.options), (*consts.values(), *values))


def chain_function(pb, procs, ids):
    """The `process` program function: the processor chain over one step's scores."""
    names = P.carried_options(procs)
    warp = [(p, c) for p, c in procs if p.stage == "warp"]
    warp_names = P.carried_options(warp)

    def branch(p, consts):
        """p.fn as a cond branch: (scores, *state, *its run-time options)."""
        @named("scores", *P.STATE_FIELDS, *p.options)
        def fn(scores, *args):
            n = len(P.STATE_FIELDS)
            state = P.State(*args[:n], ids=ids)
            o = proc_options(p, consts, args[n:])
            return p.fn(scores, state, o)
        fn.__name__ = fn.__qualname__ = p.fn.__name__
        return fn

    branches = {p.name: branch(p, c) for p, c in procs}

    def apply(scores, state_args, o, stage_procs):
        state = P.State(*state_args, ids=ids)
        for p, consts in stage_procs:
            mine = o.subset(p.options)
            if p.when is None:
                scores = branches[p.name](scores, *state_args, *mine.values())
                continue
            full = proc_options(p, consts, mine.values())
            scores = cond(p.when(state, full), branches[p.name], P.unchanged, scores, *state_args, *mine.values())
        return scores

    @named("scores", *P.STATE_FIELDS, *warp_names)
    def warp_chain(scores, *args):
        """The sampling warpers, in transformers' order."""
        n = len(P.STATE_FIELDS)
        return apply(scores, args[:n], P.Options(warp_names, args[n:]), warp)

    @pb.function(arg_types=["Tensor", "Tensor", "int", "int"] + ["Any"] * (len(P.STATE_FIELDS) - 3 + len(names)))
    @named("scores", *P.STATE_FIELDS, *names)
    def process(scores, *args):
        """transformers' logits processors in its order (processors.py), the sampling
        warpers only when sampling, renormalization last."""
        n = len(P.STATE_FIELDS)
        state_args, o = args[:n], P.Options(names, args[n:])
        scores = apply(scores, state_args, o, [(p, c) for p, c in procs if p.stage == "logits"])
        if warp:
            sample = state_args[P.STATE_FIELDS.index("sample")]
            scores = cond(sample, warp_chain, P.unchanged, scores, *state_args, *o.subset(warp_names).values())
        return apply(scores, state_args, o, [(p, c) for p, c in procs if p.stage == "last"])

    return process


def chain_idle(procs, ids, state_args, o):
    """A traced bool tensor [1]: no processor of the "logits" and "last" stages acts at any
    of the lengths in `state_args`' cur_len (an i64 tensor of lengths: each `when` is
    elementwise ops, so it reads them all at once), i.e. `process` is the identity there.
    The "warp" stage is left out: it runs only when sampling, which the caller rules out.
    speculative.py's verify uses it to pick a whole block's greedy tokens in one argmax."""
    state = P.State(*state_args, ids=ids)
    acts = T.full([1], False, dtype="bool")
    for p, consts in procs:
        if p.stage == "warp":
            continue
        if p.when is None:  # acts at every step
            return T.full([1], False, dtype="bool")
        acts = T.logical_or(acts, p.when(state, proc_options(p, consts, o.subset(p.options).values())))
    return T.logical_not(T.any(acts))
