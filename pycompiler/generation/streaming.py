"""The host side of `emit` for generation: the channels the generation library emits
on ("prompt", then "tokens" once per step; docs/generation.md, "Streaming"), turned
into what Python hosts want: transformers' streamer protocol and the CLI's printout.

A "tokens" value is an int64 array [rows, n]: the tokens each row received in this
step, padded with negative ids where a row received fewer than n (beam search
streams only tokens that are final, so a sentence may gain none or several).
"""
from __future__ import annotations

import sys
import weakref
from typing import Any, Callable, Optional

import numpy as np

from .final_tokens import PROMPT, TOKENS


def token_rows(value: Any) -> list[list[int]]:
    """The new token ids per row of a "tokens" emit (padding dropped)."""
    a = np.asarray(value)
    if a.dtype != np.int64 or a.ndim != 2:
        raise ValueError(f"emit: the tokens channel carries an int64 array [rows, n], got {a.dtype} {list(a.shape)}")
    return [[int(t) for t in row if t >= 0] for row in a]


def _as_streamer_value(a: np.ndarray):
    """transformers hands streamers torch tensors; numpy when torch is not loaded
    (then no transformers streamer is in use either)."""
    torch = sys.modules.get("torch")
    return torch.from_numpy(a) if torch is not None else a


def streamer_callback(streamer) -> Callable[[str, Any], bool]:
    """An on_emit for `generate(..., streamer=s)`, calling s.put as transformers does:
    put(prompt [rows, len]) first, then put(tokens) per step: the step's ids [rows]
    when every row got one token (greedy and sampling), else, for beam search, the
    final tokens of the one sentence as a 1-D array (skipped when there are none),
    or the padded [sentences, n] array when there are several sentences (which
    transformers' own streamers refuse, as they refuse any batch above 1).
    A put that returns False (transformers' streamers return None) stops generation."""

    def on_emit(channel: str, value: Any) -> bool:
        if channel == PROMPT:
            payload = np.array(value, dtype=np.int64, copy=True)
        elif channel == TOKENS:
            a = np.array(value, dtype=np.int64, copy=True)
            if a.ndim != 2:
                raise ValueError(f"emit: the tokens channel carries an int64 array [rows, n], got {list(a.shape)}")
            if a.shape[1] == 1 and (a >= 0).all():
                payload = a[:, 0]
            elif a.shape[0] == 1:
                payload = a[0][a[0] >= 0]
                if payload.size == 0:
                    return True
            else:
                payload = a
        else:
            return True
        return streamer.put(_as_streamer_value(payload)) is not False

    return on_emit


def stream_printer(out=None) -> Callable[[str, Any], bool]:
    """An on_emit printing each step's tokens as `stream: ids; ids` (rows separated by
    "; "), flushed, as `tensorvm-run --stream` does."""

    def on_emit(channel: str, value: Any) -> bool:
        if channel == TOKENS:
            rows = token_rows(value)
            print("stream: " + "; ".join(" ".join(str(t) for t in r) for r in rows), file=out or sys.stdout, flush=True)
        return True

    return on_emit


_EMITS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def emits_tokens(program) -> bool:
    """Whether any function of the program emits (programs imported before streaming do
    not); remembered per Program, as a walk of a large program costs a millisecond."""
    if program not in _EMITS:
        _EMITS[program] = program.calls("emit")
    return _EMITS[program]


def check_streamer(streamer: Optional[Any], program) -> None:
    if streamer is None:
        return
    if not (callable(getattr(streamer, "put", None)) and callable(getattr(streamer, "end", None))):
        raise TypeError(f"generate: streamer must have put(value) and end() (transformers' BaseStreamer), "
                        f"got {type(streamer).__name__}")
    if not emits_tokens(program):
        raise ValueError(f"generate: {program.path} does not stream (its generate has no emit); "
                         "re-import the checkpoint with this version of tensorvm")
