"""Small program functions the searches share: cond and while_loop branches, and
`named`, which gives a `*args` function the parameter names its IR function shows.

Each branch becomes one IR function per signature (traced once per function
object and argument types), so they are module-level: every search uses the same
objects.
"""
from __future__ import annotations

import inspect

from .. import ops as T
from ..control import cond


def named(*names):
    """Gives a `*args` function these parameter names, so the traced IR function reads
    `def beam_step(running, ..., top_p, ...)` rather than `arg_0, arg_1, ...`."""
    def deco(fn):
        def f(*args):
            return fn(*args)

        f.__name__ = f.__qualname__ = fn.__name__
        f.__doc__ = fn.__doc__
        f.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
        return f
    return deco


def first(a, b):
    return a


def second(a, b):
    return b


def append_step(scores, step):
    """Per-step scores for output_scores: [steps, rows, V] grows by one step."""
    return T.concat(scores, T.unsqueeze(step, 0), dim=0)


def record_step(scores, raw, step, logits, out_scores, out_logits):
    """output_scores / output_logits: the step's processed scores and raw logits
    appended to those asked for."""
    return cond(out_scores, append_step, first, scores, step), cond(out_logits, append_step, first, raw, logits)


def keep_steps(scores, raw, step, logits, out_scores, out_logits):
    return scores, raw


def recorded(scores, raw, step, logits, o):
    """One cond per step when neither output is asked for (the usual case)."""
    return cond(T.logical_or(o.out_scores, o.out_logits), record_step, keep_steps, scores, raw, step, logits,
                o.out_scores, o.out_logits)


def asked(flag, value):
    """`value` when the output is asked for (flag), else None: what generate returns."""
    return cond(flag, first, second, value, None)


def best_token(scores, generator):
    return T.argmax(scores, dim=-1)


def draw_token(scores, generator):
    return T.squeeze(T.multinomial(T.softmax(scores, -1), generator, 1), 1)


def best_candidates(acc, k, generator):
    """The k best of the [batch, beams * V] accumulated log-probs (torch.topk)."""
    return T.topk(acc, k)


def sampled_candidates(acc, k, generator):
    """Beam sampling: k candidates drawn without replacement from softmax(acc)."""
    idx = T.multinomial(T.softmax(acc, -1), generator, k)
    return T.gather(acc, 1, idx), idx


def keep_cache(cache, tokens, mask):
    return cache
