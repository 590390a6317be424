"""Inputs and outputs of `tensorvm run/replay/profile/diff/bundle`: the inputs are built
by tensorvm-run's code (cli/run_io.h, through the binding pycompiler/bindings/cli.cpp),
so both commands take the same files and options and pad --ids alike.

Each parameter takes, in this order: --wav (audio), --ids (input_ids / attention_mask,
left-padded for a decoder-only program), --decoder-ids (decoder_input_ids, the decoder
prompt: rows of one length), --arg NAME=VALUE (parsed by the declared type), the array
named after it in --inputs, the array arr_<position>, or, for an option, the program's
default. --inputs is an .npz (numpy.savez) or a .safetensors file, told apart by its
first bytes. Outputs are written as arr_0, arr_1, ... (scalars as 0-d arrays) to .npz
or .safetensors, by the name's extension.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from . import weights_io

ARRAY_SUFFIXES = (".npz", ".safetensors")


class CLIError(Exception):
    pass


def parse_args(pairs: Sequence[str]) -> dict:
    """--arg NAME=VALUE... -> {NAME: VALUE} (the last wins, as in tensorvm-run)."""
    out = {}
    for kv in pairs:
        if "=" not in kv:
            raise CLIError(f"--arg takes NAME=VALUE, got '{kv}'")
        k, v = kv.split("=", 1)
        out[k] = v
    return out


def build_inputs(program, function: str, options: Any, id_rows: Optional[list] = None,
                 arrays: Optional[dict] = None) -> list:
    """The inputs of `function` in parameter order, built by tensorvm-run's own code
    (cli/main.h function_inputs, bound as _C.build_inputs) from the options of `options`
    (an argparse namespace: inputs, arg, ids, decoder_ids, wav, outputs, language, task;
    those it lacks are not given). `id_rows` (rows of token ids) stands for --ids and
    `arrays` (numpy arrays by parameter name) add to --inputs: inspect --memory's --shapes."""
    from .. import _C

    def opt(name):
        return getattr(options, name, None) or ""

    return _C.build_inputs(program._vm(), str(program.path), function, inputs=opt("inputs"), ids=opt("ids"),
                           id_rows=id_rows or [], decoder_ids=opt("decoder_ids"), wav=opt("wav"),
                           args=parse_args(getattr(options, "arg", None) or []), arrays=arrays or {},
                           outputs=opt("outputs"), language=opt("language"), task=opt("task"),
                           threads=program.num_threads, max_instructions=program.max_instructions)


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


def save_outputs(path: Optional[str], values: list, printed=None) -> None:
    """Writes `values` to `path`, or prints them when it is None: each as arr_i, but where
    printed(i, value) prints it its own way and returns True."""
    if path is None:
        for i, v in enumerate(values):
            if printed is not None and printed(i, v):
                continue
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
