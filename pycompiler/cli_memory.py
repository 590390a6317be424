"""`tensorvm inspect --memory PROGRAM [FUNCTION] --shapes name=1x12 ...`: the arena a
run needs for inputs of given shapes (docs/runtime.md, "A memory arena").

The figure is measured, not derived: the function runs once in the C++ VM under a
measuring arena (vm/memory_report.h), so a while_loop counts as many iterations as
these inputs make it run. For generation that is until every row ends; give
`--arg max_new_tokens=N --arg min_new_tokens=N` to take all N steps, the worst case.
"""
from __future__ import annotations

import json
import re

import numpy as np

from .cli_io import CLIError, build_inputs

_DTYPES = {"f32": np.float32, "f64": np.float64, "i64": np.int64, "i32": np.int32, "bool": np.bool_, "u8": np.uint8}
_SHAPE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\d+(?:x\d+)*|scalar)(?::([a-z0-9]+))?$")


def default_dtype(name: str) -> str:
    """Token ids and masks are i64, anything else f32 (override with name=1x12:f32)."""
    return "i64" if name.endswith("ids") or name.endswith("mask") else "f32"


def shaped_arrays(fn, specs) -> dict:
    """name=1x12[:dtype] -> an array of that shape: integers 1 (a mask of ones, ids of
    token 1), floats 0. Real values come from --inputs / --ids instead."""
    names = [p.name for p in fn.params]
    out = {}
    for spec in specs:
        m = _SHAPE.match(spec)
        if not m:
            raise CLIError(f"--shapes {spec}: expected NAME=DxDx...[:dtype], e.g. input_ids=1x12 or x=2x80:f32")
        name, dims, dtype = m.group(1), m.group(2), m.group(3) or default_dtype(m.group(1))
        if name not in names:
            raise CLIError(f"--shapes {spec}: {fn.name} has no parameter '{name}' (it takes: {', '.join(names)})")
        if dtype not in _DTYPES:
            raise CLIError(f"--shapes {spec}: unknown dtype '{dtype}' (one of {', '.join(_DTYPES)})")
        shape = () if dims == "scalar" else tuple(int(d) for d in dims.split("x"))
        fill = 0 if dtype in ("f32", "f64") else 1
        out[name] = np.full(shape, fill, dtype=_DTYPES[dtype])
    return out


def _human(n: int) -> str:
    return f"{n} bytes" if n < 1024 else f"{n} bytes ({n / 2**20:.2f} MiB)"


def cmd_memory(args, program) -> int:
    functions = program.functions
    name = args.function or ("generate" if "generate" in functions else None)
    if name is None:
        raise CLIError(f"inspect --memory: name the function to measure (one of {', '.join(functions)})")
    if name not in functions:
        raise CLIError(f"inspect --memory: no function '{name}' (functions: {', '.join(functions)})")
    fn = program.function(name)
    inputs = build_inputs(program, name, args, arrays=shaped_arrays(fn, args.shapes))
    report = program.memory(name, *inputs)
    described = [f"{p.name} {_describe(v)}" for p, v in zip(fn.params, inputs) if v is not None]
    if args.json:
        fields = ("arena_bytes", "peak_bytes", "largest_tensor", "allocations", "instructions", "high_water_at")
        print(json.dumps({"function": name, "inputs": described, "threads": program.num_threads,
                          **{k: report[k] for k in fields}}, indent=2))
        return 0
    print(f"memory of {name}({', '.join(described)}), {program.num_threads} thread(s), measured by running it:")
    print(f"  arena needed     {_human(report['arena_bytes'])}: a session with an arena this large runs these inputs")
    print(f"  peak live        {_human(report['peak_bytes'])}: the most tensor bytes alive at once")
    print(f"  largest tensor   {_human(report['largest_tensor'])}")
    print(f"  tensors carved   {report['allocations']} in {report['instructions']} instructions")
    print(f"  high-water at    {report['high_water_at']}")
    print("Weights are mapped, not counted. Loops ran as often as these inputs made them; for generation, "
          "--arg max_new_tokens=N --arg min_new_tokens=N measures all N steps (the worst case).")
    return 0


def _describe(v) -> str:
    if isinstance(v, np.ndarray):
        return f"{v.dtype.name}{list(v.shape)}" if v.ndim else f"= {v.item()!r}"
    return f"= {v!r}"
