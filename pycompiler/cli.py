"""The `tensorvm` command: run, replay and inspect program directories; list the ops.

    tensorvm run PROGRAM FUNCTION [--inputs in.npz] [--outputs out.npz] [--threads N]
    tensorvm replay PROGRAM FUNCTION [--inputs in.npz] [--outputs out.npz]
    tensorvm inspect PROGRAM [--ir]
    tensorvm ops [--json]

Inputs: an .npz whose arrays are named arr_0, arr_1, ... (by position) or by the
function's parameter names; a scalar parameter takes a 0-d array. Outputs are
saved as arr_0, arr_1, ... (scalars as 0-d arrays). Errors are one line on stderr
and exit status 1; --debug shows the traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from .quantize import QUANTIZATIONS


class CLIError(Exception):
    pass


def _load_inputs(path: Optional[str], fn) -> list:
    import numpy as np

    if path is None:
        if fn.params:
            raise CLIError(f"{fn.name} takes {len(fn.params)} inputs ({', '.join(p.name for p in fn.params)}): pass --inputs FILE.npz")
        return []
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise CLIError(f"{path}: no such file") from None
    except (OSError, ValueError) as e:
        raise CLIError(f"{path}: cannot read inputs: {e}") from None
    names = [p.name for p in fn.params]
    positional = [f"arr_{i}" for i in range(len(names))]
    if set(arrays) == set(positional):
        ordered = [arrays[k] for k in positional]
    elif set(arrays) == set(names):
        ordered = [arrays[k] for k in names]
    else:
        raise CLIError(f"{path}: expected arrays {', '.join(positional) or '(none)'} or {', '.join(names) or '(none)'} "
                       f"for {fn.name}, found {', '.join(sorted(arrays)) or 'none'}")
    out = []
    for v, p in zip(ordered, fn.params):
        if p.type in ("int", "float", "bool", "str") and isinstance(v, np.ndarray) and v.ndim != 0:
            raise CLIError(f"input '{p.name}' is declared {p.type}: give a 0-d array, got shape {list(v.shape)}")
        out.append(v)
    return out


def _as_array(value: Any, i: int):
    import numpy as np

    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (bool, int, float, str)):
        return np.asarray(value)
    if isinstance(value, (list, tuple)) and all(isinstance(x, int) for x in value):
        return np.asarray(value, dtype=np.int64)
    raise CLIError(f"output {i} is a {type(value).__name__} ({value!r}), which cannot be saved to .npz")


def _save_outputs(path: Optional[str], result: Any, fn) -> None:
    import numpy as np

    values = list(result) if isinstance(result, tuple) else ([] if result is None and not fn.return_types else [result])
    if path is None:
        for i, v in enumerate(values):
            if isinstance(v, np.ndarray):
                body = np.array2string(v, threshold=20, edgeitems=3)
                print(f"arr_{i}: {v.dtype}{list(v.shape)}\n{body}")
            else:
                print(f"arr_{i}: {v!r}")
        return
    arrays = {f"arr_{i}": _as_array(v, i) for i, v in enumerate(values)}
    try:
        np.savez(path, **arrays)
    except OSError as e:
        raise CLIError(f"{path}: cannot write outputs: {e}") from None


def cmd_run(args, replay: bool) -> int:
    from .export import load

    program = load(args.program, num_threads=getattr(args, "threads", 1))
    fn = program.module.function(args.function)
    inputs = _load_inputs(args.inputs, fn)
    result = program.replay(args.function, *inputs) if replay else program.run(args.function, *inputs)
    _save_outputs(args.outputs, result, fn)
    return 0


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def cmd_inspect(args) -> int:
    from .export import load

    program = load(args.program)
    if args.ir:
        sys.stdout.write(program.ir)
        return 0
    out = [f"program {program.path}"]
    meta = {k: v for k, v in program.meta.items() if k not in ("format", "version")}
    out.append(f"format {program.meta['format']} version {program.meta['version']}")
    if meta:
        out.append("meta: " + json.dumps(meta, sort_keys=True))
    out.append("")
    out.append(f"functions ({len(program.module.functions)}):")
    for f in program.module.functions:
        counts = f.op_counts()
        total = sum(counts.values())
        out.append(f"  {f.signature()[4:-1]}")
        out.append(f"    {total} instructions: " + ", ".join(f"{op} {n}" for op, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))))
    weights = program.weights_info()
    total = sum(w[3] for w in weights)
    out.append("")
    out.append(f"weights ({len(weights)}, {total} bytes = {_human(total)}):")
    width = max((len(w[0]) for w in weights), default=0)
    for name, dtype, shape, nbytes in weights:
        out.append(f"  {name.ljust(width)}  {dtype:<4} {str(list(shape)):<16} {nbytes} bytes")
    print("\n".join(out))
    return 0


def cmd_ops(args) -> int:
    from . import registry

    specs = list(registry.real_ops().values())
    if args.json:
        rows = [{"name": s.name, "group": s.group, "signature": s.signature_text, "outputs": list(s.outputs),
                 "params": [{"name": p.name, "kind": p.kind, "variadic": p.variadic, "has_default": p.has_default,
                             "default": p.default} for p in s.params], "doc": s.doc} for s in specs]
        print(json.dumps(rows, indent=2))
        return 0
    group = None
    for s in specs:
        if s.group != group:
            group = s.group
            print(f"{'' if s is specs[0] else chr(10)}[{group}]")
        print(f"  {s.signature_text}")
    return 0


def cmd_import_hf(args) -> int:
    from .import_hf import import_hf

    out = import_hf(args.checkpoint, args.output, quantize=args.quantize)
    print(f"wrote {out}")
    return 0


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors")
    p = argparse.ArgumentParser(prog="tensorvm", description="Run, replay and inspect tensorvm programs.", parents=[common])
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, help_ in (("run", "run a function in the C++ VM"), ("replay", "run a function with the Python reference ops")):
        r = sub.add_parser(name, help=help_, parents=[common])
        r.add_argument("program", help="program directory")
        r.add_argument("function", help="function to run")
        r.add_argument("--inputs", help=".npz of inputs (arr_0.. or parameter names)")
        r.add_argument("--outputs", help=".npz to write the outputs to (printed when omitted)")
        if name == "run":
            r.add_argument("--threads", type=int, default=1, help="threads for the kernels")
    i = sub.add_parser("inspect", help="functions, instruction counts and weights of a program", parents=[common])
    i.add_argument("program", help="program directory")
    i.add_argument("--ir", action="store_true", help="print the IR text")
    h = sub.add_parser("import-hf", help="import a transformers MarianMTModel checkpoint directory", parents=[common])
    h.add_argument("checkpoint", help="checkpoint directory (config.json, weights, generation_config.json)")
    h.add_argument("-o", "--output", required=True, help="program directory to write")
    h.add_argument("--quantize", choices=list(QUANTIZATIONS), default=None,
                   help="; ".join(f"{k}: {v}" for k, v in QUANTIZATIONS.items()))
    o = sub.add_parser("ops", help="list the ops of the registry", parents=[common])
    o.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        if args.command in ("run", "replay"):
            return cmd_run(args, replay=args.command == "replay")
        if args.command == "inspect":
            return cmd_inspect(args)
        if args.command == "import-hf":
            return cmd_import_hf(args)
        return cmd_ops(args)
    except KeyboardInterrupt:
        if debug:
            raise
        print("tensorvm: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 -- every error becomes one line unless --debug
        if debug:
            raise
        msg = str(e).strip().splitlines()
        if isinstance(e, KeyError) and msg and msg[0].startswith(("'", '"')) and msg[0].endswith(("'", '"')):
            msg[0] = msg[0][1:-1]
        detail = msg[0] if msg else type(e).__name__
        if len(msg) > 1:
            detail += " (" + "; ".join(m.strip() for m in msg[1:] if m.strip())[:300] + ")"
        print(f"tensorvm: error: {detail}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
