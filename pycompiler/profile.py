"""Where a run's time goes: `Program.profile(function, ...)` and `tensorvm profile`,
over the VM's Profiler hook (vm/profiler.h; docs/tools.md).

The result holds a per-op table (calls, total and mean time, share of the run, bytes
read and written, GFLOP/s for the ops that multiply, GB/s for the others), a
per-call table (inclusive times of calls and loops) and a per-instruction table
(function:line and the IR statement), and writes the run as a Chrome trace / Perfetto
JSON file in which function calls and while_loop iterations are nested slices.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import _C
from . import ir


def inputs_by_name(fn: ir.Function, args: tuple, named: dict) -> list:
    """Positional inputs of `fn` from positional `args` followed by `named` ones;
    a parameter left out is None, which only `Any` parameters (options) accept."""
    names = [p.name for p in fn.params]
    if len(args) > len(names):
        raise TypeError(f"{fn.name} takes {len(names)} inputs, got {len(args)}")
    values: list[Any] = list(args) + [None] * (len(names) - len(args))
    given = set(names[:len(args)])
    for key, value in named.items():
        if key not in names:
            raise TypeError(f"{fn.name} has no input '{key}' (it takes: {', '.join(names)})")
        if key in given:
            raise TypeError(f"{fn.name}: input '{key}' given twice")
        values[names.index(key)] = value
        given.add(key)
    for p in fn.params:
        if p.name not in given and p.type != "Any":
            raise TypeError(f"{fn.name}: missing input '{p.name}' ({p.type})")
    return values


class Profile:
    """What `Program.profile` measured: tables, raw numbers and the trace."""

    def __init__(self, profiler, function: str, result: Any, repeat: int):
        self._profiler = profiler
        self.function = function
        self.result = result  # what the (last) profiled run returned
        self.repeat = repeat

    @property
    def run_seconds(self) -> float:
        """Wall time of the profiled runs, all `repeat` of them."""
        return self._profiler.run_seconds

    @property
    def ops(self) -> dict:
        """op -> count, seconds, macs, weight_macs, bytes_in, bytes_out, weight_bytes."""
        return self._profiler.ops()

    @property
    def calls(self) -> dict:
        """call (function name), while_loop, cond, emit -> the same fields, time inclusive."""
        return self._profiler.calls()

    @property
    def instructions(self) -> list[dict]:
        """Every instruction that ran: function, line, op, kind, text and its totals."""
        return self._profiler.instructions()

    def op_table(self) -> str:
        return self._profiler.op_table()

    def call_table(self) -> str:
        return self._profiler.call_table()

    def instruction_table(self, top: int = 20) -> str:
        return self._profiler.instruction_table(top)

    def report(self, top: int = 20) -> str:
        return self._profiler.report(top)

    def __str__(self) -> str:
        return self.report()

    def trace_events(self) -> dict:
        """The trace as parsed JSON (the "traceEvents" of the Chrome trace format)."""
        return json.loads(self._profiler.trace_json())

    def trace(self, path) -> Path:
        """Writes the Chrome trace / Perfetto JSON to `path` (atomically); returns it.
        Open it in https://ui.perfetto.dev or chrome://tracing."""
        self._profiler.write_trace(str(path))
        return Path(path)


def profile(program, function: str, *args: Any, warmup: int = 0, repeat: int = 1, trace: bool = True,
            cpu_time: bool = False, **named: Any) -> Profile:
    """Runs `function` of `program` (a tensorvm.Program) `warmup` times unmeasured,
    then `repeat` times under the profiler; inputs as for Program.run, or by name.
    With `cpu_time`, times are the calling thread's CPU time (for a busy machine; one
    thread: what pool threads do is not counted)."""
    from .inputs import coerce_inputs, shape_result

    if warmup < 0 or repeat < 1:
        raise ValueError(f"profile: warmup must be >= 0 and repeat >= 1, got {warmup} and {repeat}")
    fn = program.function(function)
    inputs = coerce_inputs(fn, tuple(inputs_by_name(fn, args, named)))
    session = program.session
    for _ in range(warmup):
        session.run(function, inputs)
    profiler = _C.Profiler(trace=trace, cpu_time=cpu_time)
    session.set_profiler(profiler)
    try:
        for _ in range(repeat):
            outs = session.run(function, inputs)
    finally:
        session.set_profiler(None)
    return Profile(profiler, function, shape_result(fn, outs), repeat)
