"""Bundled checks: example inputs and the outputs they give, stored in the program
directory (as ExecuTorch's bundled program stores them), for `tensorvm-run PROGRAM
verify` to rerun on a device and compare (cli/verify.cpp).

A program directory's bundle is bundle.json (the manifest) and one
bundle-<digest>.safetensors per case, holding `input.<parameter>` (a scalar as a 0-d
array; a None option left out) and `expected.<k>` for output k. Each file is written
atomically and the manifest last, so a reader sees the old bundle or the new one.
Integer and bool outputs must match exactly; float outputs within
|got - expected| <= atol + rtol * |expected|.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from . import weights_io
from .program_dir import write_file_atomic

MANIFEST = "bundle.json"
FORMAT = "tensorvm-bundle"
VERSION = 1


class BundleError(ValueError):
    pass


@dataclass
class BundledCase:
    index: int
    function: str
    outputs: list[dict]


def read_manifest(program_dir) -> dict:
    path = Path(program_dir) / MANIFEST
    if not path.is_file():
        return {"format": FORMAT, "version": VERSION, "cases": []}
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise BundleError(f"{path}: not a {FORMAT} version {VERSION} manifest")
    return manifest


def _as_array(value: Any, what: str) -> np.ndarray:
    if isinstance(value, bool):
        return np.array(value, dtype=np.bool_)
    if isinstance(value, int):
        return np.array(value, dtype=np.int64)
    if isinstance(value, float):
        return np.array(value, dtype=np.float64)
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value)
    raise BundleError(f"{what} is {type(value).__name__}, which a bundle cannot store (tensors and scalars only)")


def bundle(program, function: str, inputs: Sequence[Any], *, atol: float = 1e-4, rtol: float = 1e-4,
           replace: bool = False) -> BundledCase:
    """Runs `function` of a loaded program on `inputs` in the C++ VM and stores the
    inputs and its outputs as a new case of the program's bundle."""
    if program.path is None:
        raise BundleError("bundle: the program was loaded from memory; load it from its directory to bundle into it")
    if atol < 0 or rtol < 0:
        raise BundleError(f"tolerances must be >= 0, got atol={atol}, rtol={rtol}")
    fn = program.function(function)
    arrays: dict[str, np.ndarray] = {}
    for p, v in zip(fn.params, inputs):
        if v is not None:
            arrays[f"input.{p.name}"] = _as_array(v, f"input '{p.name}' of {function}")
    result = program.run(function, *inputs)
    values = list(result) if isinstance(result, tuple) and len(fn.return_types) > 1 else \
        ([] if result is None and not fn.return_types else [result])
    outputs = []
    for k, v in enumerate(values):
        if v is None:
            outputs.append({"index": k, "none": True})
            continue
        a = _as_array(v, f"output {k} of {function}")
        arrays[f"expected.{k}"] = a
        entry = {"index": k, "dtype": weights_io.dtype_name(a.dtype), "shape": list(a.shape)}
        floating = entry["dtype"] in ("F64", "F32", "F16", "BF16")  # (numpy calls bfloat16 kind "V")
        entry.update({"compare": "close", "atol": atol, "rtol": rtol} if floating else {"compare": "exact"})
        outputs.append(entry)

    directory = Path(program.path)
    manifest = {"format": FORMAT, "version": VERSION, "cases": []} if replace else read_manifest(directory)
    digest = hashlib.sha256()
    for name in sorted(arrays):
        digest.update(name.encode())
        digest.update(arrays[name].tobytes())
    file_name = f"bundle-{digest.hexdigest()[:16]}.safetensors"
    weights_io.write(directory / file_name, arrays, alignment=1)  # readable by the safetensors package too
    manifest["cases"].append({"function": function, "arrays": file_name, "outputs": outputs})
    write_file_atomic(directory / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    used = {c["arrays"] for c in manifest["cases"]}
    for old in directory.glob("bundle-*.safetensors"):
        if old.name not in used:
            old.unlink()
    return BundledCase(len(manifest["cases"]) - 1, function, outputs)
