"""`Program.generate`: transformers' generate() keywords over a program's `generate`.

Defaults come from the imported checkpoint's generation_config (kept in meta.json);
a request the program cannot honour is an error, never a silently different result.
"""
from __future__ import annotations

import numpy as np

_SUPPORTED = ("num_beams", "max_new_tokens", "max_length")


def _ids(array, name: str) -> np.ndarray:
    a = np.asarray(array)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.dtype.kind not in "iu":
        raise ValueError(f"generate: {name} must be an int array [batch, length], got {a.dtype}{list(a.shape)}")
    return np.ascontiguousarray(a, dtype=np.int64)


def generate(program, input_ids, attention_mask=None, *, max_new_tokens=None, max_length=None, num_beams=None,
             **options) -> np.ndarray:
    """Sequences [batch, length] (int64), as `model.generate(...)` returns them."""
    if "generate" not in program.functions:
        raise ValueError(f"{program.path} has no generate function (it has {program.functions})")
    unknown = sorted(options)
    if unknown:
        raise TypeError(f"generate: unsupported option(s) {unknown} (this program supports {list(_SUPPORTED)})")
    meta = program.meta or {}
    beams = meta.get("num_beams", 1) if num_beams is None else num_beams
    if beams != 1:
        raise ValueError(f"generate: num_beams={beams} (the checkpoint's default is {meta.get('num_beams', 1)}) needs "
                         "beam search, which this program does not implement; pass num_beams=1 for greedy search")
    ids = _ids(input_ids, "input_ids")
    mask = np.ones_like(ids) if attention_mask is None else _ids(attention_mask, "attention_mask")
    if mask.shape != ids.shape:
        raise ValueError(f"generate: attention_mask {list(mask.shape)} does not match input_ids {list(ids.shape)}")
    for name, value in (("max_new_tokens", max_new_tokens), ("max_length", max_length)):
        if value is not None and (not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1):
            raise ValueError(f"generate: {name} must be a positive int, got {value!r}")
    limit = max_length if max_new_tokens is None else max_new_tokens + 1
    limit = meta.get("max_length", 20) if limit is None else limit
    max_pos = meta.get("max_position_embeddings")
    if max_pos is not None and (limit > max_pos or ids.shape[1] > max_pos):
        raise ValueError(f"generate: lengths beyond max_position_embeddings={max_pos} are not supported "
                         f"(source {ids.shape[1]}, max_length {limit})")
    out = program.run("generate", ids, mask, None if max_length is None else int(max_length),
                      None if max_new_tokens is None else int(max_new_tokens))
    return out[0] if isinstance(out, (list, tuple)) else out
