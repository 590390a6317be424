"""The `process` program function: the processor chain (processors.py) over one
step's scores, the sampling warpers in a cond of their own, each processor with a
`when` in a cond so that an option left off costs one test per step."""
from __future__ import annotations

from ..control import cond
from . import processors as P
from .branches import named


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
            o = P.Options((*consts, *p.options), (*consts.values(), *args[n:]))
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
            full = P.Options((*consts, *p.options), (*consts.values(), *mine.values()))
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
