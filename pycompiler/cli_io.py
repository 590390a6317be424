"""Inputs and outputs of `tensorvm run/replay`, the same rules as `tensorvm-run`
(cli/tensorvm_run.cpp), so both commands take the same files and options.

Each parameter takes, in this order: --ids (input_ids / attention_mask),
--decoder-ids (decoder_input_ids, the decoder prompt: rows of one length), --arg
NAME=VALUE (parsed by the declared type), the array named after it in --inputs, the
array arr_<position>, or, for an option, the program's default. --inputs is an .npz
(numpy.savez) or a .safetensors file, told apart by its first bytes. Outputs are
written as arr_0, arr_1, ... (scalars as 0-d arrays) to .npz or .safetensors, by the
name's extension.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from . import weights_io

ARRAY_SUFFIXES = (".npz", ".safetensors")


class CLIError(Exception):
    pass


def read_arrays(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            head = f.read(9)
    except FileNotFoundError:
        raise CLIError(f"{path}: no such file") from None
    except OSError as e:
        raise CLIError(f"{path}: cannot read inputs: {e}") from None
    try:
        if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
            with np.load(path, allow_pickle=False) as data:
                return {k: data[k] for k in data.files}
        if len(head) == 9 and head[8:9] == b"{":
            arrays, _ = weights_io.read(path)
            return {k: np.array(v) for k, v in arrays.items()}
    except (OSError, ValueError) as e:
        raise CLIError(f"{path}: cannot read inputs: {e}") from None
    raise CLIError(f"{path}: cannot read inputs: neither an .npz (numpy.savez) nor a .safetensors file")


def parse_scalar(type_: str, text: str, name: str) -> Any:
    """An --arg value by its parameter's declared type (as tensorvm-run parses it)."""
    try:
        if type_ == "int":
            return int(text)
        if type_ == "float":
            return float(text)
        if type_ == "bool":
            if text in ("true", "True", "1"):
                return True
            if text in ("false", "False", "0"):
                return False
        elif type_ == "str":
            return text
        elif type_ == "None" or text == "None":
            return None
        elif type_ == "Any":  # an option: the most specific literal it reads as
            if text in ("True", "true"):
                return True
            if text in ("False", "false"):
                return False
            for kind in (int, float):
                try:
                    return kind(text)
                except ValueError:
                    pass
            return text
    except ValueError:
        pass
    raise CLIError(f"--arg {name}={text}: not a valid {type_}")


def parse_ids(text: str, option: str = "--ids") -> list:
    """"1 2 3; 4 5" -> rows of token ids (`option` names the flag in errors)."""
    rows = []
    for row in text.split(";"):
        toks = row.replace(",", " ").split()
        if not toks:
            raise CLIError(f"{option}: every row needs at least one token id")
        for t in toks:
            try:
                int(t)
            except ValueError:
                raise CLIError(f"{option}: '{t}' is not a token id") from None
        rows.append([int(t) for t in toks])
    return rows


def parse_args(pairs: Sequence[str]) -> dict:
    out = {}
    for kv in pairs:
        if "=" not in kv:
            raise CLIError(f"--arg takes NAME=VALUE, got '{kv}'")
        k, v = kv.split("=", 1)
        out[k] = v
    return out


def parse_prompt(text: str) -> np.ndarray:
    """--decoder-ids: a dense [batch, p] prompt (transformers takes a tensor: one length)."""
    rows = parse_ids(text, "--decoder-ids")
    if len({len(r) for r in rows}) != 1:
        raise CLIError(f"--decoder-ids: every row needs the same number of tokens (a decoder prompt is [batch, p]), "
                       f"got {sorted({len(r) for r in rows})}")
    return np.array(rows, np.int64)


def build_inputs(fn, inputs_path: Optional[str], arg_pairs: Sequence[str], ids_text: Optional[str], pad_id: int,
                 decoder_ids_text: Optional[str] = None, arrays_by_name: Optional[dict] = None) -> list:
    """`arrays_by_name` adds arrays (by parameter name) over those of `inputs_path`."""
    args = parse_args(arg_pairs)
    arrays = read_arrays(inputs_path) if inputs_path else {}
    arrays.update(arrays_by_name or {})
    names = [p.name for p in fn.params]
    positional = [f"arr_{i}" for i in range(len(names))]
    unknown = sorted(set(arrays) - set(names) - set(positional))
    if unknown:
        raise CLIError(f"{inputs_path}: expected arrays {', '.join(positional) or '(none)'} or {', '.join(names) or '(none)'} "
                       f"for {fn.name}, found {', '.join(unknown)}")
    for name, pos in zip(names, positional):
        if name in arrays and pos in arrays and name != pos:
            raise CLIError(f"{inputs_path}: input '{name}' of {fn.name} given twice, as {name} and {pos}")
    extra = sorted(set(args) - set(names))
    if extra:
        raise CLIError(f"--arg {extra[0]}: {fn.name} has no such parameter")
    ids = parse_ids(ids_text) if ids_text else None
    prompt = parse_prompt(decoder_ids_text) if decoder_ids_text else None
    if prompt is not None and "decoder_input_ids" not in names:
        raise CLIError(f"--decoder-ids: {fn.name} has no parameter decoder_input_ids")

    out = []
    for p, pos in zip(fn.params, positional):
        if ids is not None and p.name in ("input_ids", "attention_mask"):
            width = max(len(r) for r in ids)
            if p.name == "input_ids":
                out.append(np.array([r + [pad_id] * (width - len(r)) for r in ids], np.int64))
            else:
                out.append(np.array([[1] * len(r) + [0] * (width - len(r)) for r in ids], np.int64))
        elif prompt is not None and p.name == "decoder_input_ids":
            out.append(prompt)
        elif p.name in args:  # overrides an array of --inputs
            out.append(parse_scalar(p.type, args[p.name], p.name))
        elif p.name in arrays or pos in arrays:
            v = arrays[p.name] if p.name in arrays else arrays[pos]
            if p.type in ("int", "float", "bool", "str") and v.ndim != 0:
                raise CLIError(f"input '{p.name}' is declared {p.type}: give a 0-d array, got shape {list(v.shape)}")
            out.append(v)
        elif p.type in ("None", "Any"):
            out.append(None)  # an option left to the program's default
        else:
            raise CLIError(f"no value for input '{p.name}' ({p.type}) of {fn.name}: "
                           f"pass --inputs FILE (.npz or .safetensors), --arg {p.name}=... or --ids")
    return out


def _as_array(value: Any, i: int) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (bool, int, float)):
        return np.asarray(value)
    if isinstance(value, (list, tuple)) and all(isinstance(x, int) for x in value):
        return np.asarray(value, dtype=np.int64)
    raise CLIError(f"--outputs: output {i} is a {type(value).__name__} ({value!r}), which cannot be saved as an array")


def check_output_name(path: Optional[str]) -> None:
    if path is not None and not path.endswith(ARRAY_SUFFIXES):
        raise CLIError(f"--outputs {path}: the name must end in .npz or .safetensors")


def save_outputs(path: Optional[str], values: list) -> None:
    if path is None:
        for i, v in enumerate(values):
            if isinstance(v, np.ndarray):
                body = np.array2string(v, threshold=20, edgeitems=3)
                print(f"arr_{i}: {v.dtype}{list(v.shape)}\n{body}")
            else:
                print(f"arr_{i}: {v!r}")
        return
    # A None output (an optional result the call did not produce) is left out, as tensorvm-run does.
    arrays = {f"arr_{i}": _as_array(v, i) for i, v in enumerate(values) if v is not None}
    try:
        if path.endswith(".npz"):
            _savez_atomic(path, arrays)
        else:
            weights_io.write(path, arrays, alignment=1)
    except (OSError, ValueError) as e:
        raise CLIError(f"{path}: cannot write outputs: {e}") from None


def _savez_atomic(path: str, arrays: dict) -> None:
    """np.savez into a temporary file beside `path`, renamed over it once complete."""
    from .program_dir import write_file_atomic

    write_file_atomic(path, lambda f: np.savez(f, **arrays))
