"""numpy reference of the generation ops: the seeded generator (rng, rand,
multinomial) and the option checks (option_index, check). Same semantics and the
same random stream as ops/generation.cpp and core/rng.h, so a replayed program draws
exactly the numbers the VM draws."""
import numpy as np

from .ops import OPS, OpError, op

_MASK = (1 << 64) - 1
_GAMMA = np.uint64(0x9E3779B97F4A7C15)


def _mix(z):
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


class Rng:
    """splitmix64: the state is a counter advanced by a fixed odd constant per draw."""

    type_name = "Rng"

    def __init__(self, seed):
        self.state = int(seed) & _MASK

    def next_u64(self, n):
        """The next n outputs (uint64 array)."""
        with np.errstate(over="ignore"):
            counters = np.uint64(self.state) + np.arange(1, n + 1, dtype=np.uint64) * _GAMMA
        self.state = (self.state + n * int(_GAMMA)) & _MASK
        return _mix(counters)

    def next_double(self):
        return float(int(self.next_u64(1)[0]) >> 11) * 2.0 ** -53

    def __repr__(self):
        return f"Rng(state={self.state:#018x})"


def _gen(name, g):
    if not isinstance(g, Rng):
        raise OpError(f"{name}: argument 'rng' must be a Rng")
    return g


@op
def rng(seed):
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise OpError(f"rng: seed must be an int, got {seed!r}")
    return Rng(seed)


@op
def rand(rng, shape):
    g = _gen("rand", rng)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise OpError(f"rand: shape must not have negative dims, got {list(shape)}")
    n = int(np.prod(shape, dtype=np.int64))
    bits = g.next_u64(n) >> np.uint64(40)
    return (bits.astype(np.float32) * np.float32(2.0 ** -24)).reshape(shape)


@op
def multinomial(probs, rng, num_samples=1):
    g = _gen("multinomial", rng)
    if not isinstance(probs, np.ndarray) or probs.dtype != np.float32 or probs.ndim not in (1, 2):
        raise OpError("multinomial: probs must be a 1-D or 2-D f32 tensor")
    if not 1 <= num_samples <= probs.shape[-1]:
        raise OpError(f"multinomial: num_samples must be in [1, {probs.shape[-1]}] (the number of categories), "
                      f"got {num_samples}")
    rows = probs.reshape(-1, probs.shape[-1])
    out = np.zeros((rows.shape[0], num_samples), np.int64)
    for r, row in enumerate(rows):
        if not np.all(np.isfinite(row)) or np.any(row < 0):
            raise OpError(f"multinomial: probs must be finite and non-negative (row {r})")
        w = row.astype(np.float64)
        taken = np.zeros(w.shape, bool)
        for s in range(num_samples):
            cum = np.cumsum(w)  # sequential, in double, as the kernel sums
            if cum[-1] > 0:
                target = g.next_double() * float(cum[-1])
                pick = int(np.searchsorted(cum, target, side="right"))
                if pick >= w.shape[0]:  # target rounded up to the total: the last non-zero weight
                    pick = int(np.flatnonzero(w > 0)[-1])
            else:  # every non-zero weight drawn: zero-weight indices in increasing order
                pick = int(np.flatnonzero(~taken)[0])
            out[r, s] = pick
            taken[pick] = True
            w[pick] = 0.0
    return out if probs.ndim == 2 else out[0]


def _same_option(x, c):
    if x is None or c is None:
        return x is None and c is None
    xb, cb = isinstance(x, (bool, np.bool_)), isinstance(c, (bool, np.bool_))
    if xb or cb:
        return xb and cb and bool(x) == bool(c)
    if isinstance(x, str) or isinstance(c, str):
        return isinstance(x, str) and isinstance(c, str) and x == c
    if isinstance(x, (int, float, np.integer, np.floating)) and isinstance(c, (int, float, np.integer, np.floating)):
        return x == c
    return False


def _literal(v):
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


@op
def option_index(x, *choices, what="value"):
    for k, c in enumerate(choices):
        if _same_option(x, c):
            return k
    raise OpError(f"option_index: {what} must be one of {', '.join(_literal(c) for c in choices)}, got {_literal(x)}")


@op
def check(ok, message):
    if isinstance(ok, np.ndarray) and ok.dtype == np.bool_ and ok.size == 1:
        ok = bool(ok.reshape(()))
    elif isinstance(ok, (bool, np.bool_)):
        ok = bool(ok)
    else:
        raise OpError("check: ok must be a bool or a one-element bool tensor")
    if not ok:
        raise OpError(f"check: {message}")
    return True




@op
def prompt_lookup(tokens, max_ngram_size, num_tokens):
    """transformers' PromptLookupCandidateGenerator loop as it is written (the kernel
    finds the same answer in linear time)."""
    if not isinstance(tokens, np.ndarray) or tokens.dtype != np.int64 or tokens.ndim != 1:
        raise OpError("prompt_lookup: tokens must be a 1-D i64 tensor")
    if max_ngram_size < 1:
        raise OpError(f"prompt_lookup: max_ngram_size must be at least 1, got {max_ngram_size}")
    if num_tokens < 0:
        raise OpError(f"prompt_lookup: num_tokens must not be negative, got {num_tokens}")
    length = tokens.shape[0]
    for n in range(min(max_ngram_size, length - 1), 0, -1):
        query = tokens[length - n:]
        for idx in range(length - n + 1):
            if np.array_equal(tokens[idx:idx + n], query):
                start = idx + n
                end = min(start + num_tokens, length)
                if start < end:
                    return tokens[start:end].copy()
    return np.zeros(0, np.int64)


__all__ = ["Rng", "rng", "rand", "multinomial", "option_index", "check", "prompt_lookup"]
