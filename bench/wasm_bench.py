#!/usr/bin/env python3
"""ms per decode step of one program: native tensorvm-run (best variant and TENSORVM_ISA=scalar)
against the WebAssembly tensorvm-run.js under Node (SIMD build with simd128 and with scalar, and
the scalar-only build), plus the .wasm sizes (docs/web.md "Figures").

    python bench/wasm_bench.py PROGRAM --ids "120 45 3312 87 0" --native build/release/tensorvm-run \
        --wasm build/wasm [--repeats 3]

The cost of a step is measured as CPU time, not wall time, so that the figure survives a busy
machine: each runner generates with max_new_tokens=1 and with --new-tokens, and the step cost
is the difference of the process's user+system time divided by the difference in generated
tokens. Loading, the .wasm's compilation, the encoder and the first step cancel out. Medians
of --repeats runs. Greedy, one thread.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
from pathlib import Path


def run(cmd: list[str], env: dict | None) -> tuple[float, int]:
    """(CPU seconds of the child, tokens in generate's first output row)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout.splitlines()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    head = next(i for i, line in enumerate(out) if line.startswith("output 0 = tensor i64"))
    return cpu, len(out[head + 1].split())


def step_ms(exe: list[str], prog: str, ids: str, new_tokens: int, isa: str, repeats: int) -> tuple[float, int]:
    env = dict(os.environ, TENSORVM_ISA=isa) if isa else None
    costs, tokens = [], 0
    for _ in range(repeats):
        base = exe + [prog, "generate", "--ids", ids, "--arg", "max_new_tokens={}"]
        c1, n1 = run([a.format(1) for a in base], env)
        cn, nn = run([a.format(new_tokens) for a in base], env)
        tokens = nn - n1
        costs.append((cn - c1) * 1000 / max(1, tokens))
    return statistics.median(costs), tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("program")
    ap.add_argument("--ids", required=True)
    ap.add_argument("--new-tokens", type=int, default=16)
    ap.add_argument("--native", required=True, help="the native tensorvm-run")
    ap.add_argument("--wasm", required=True, type=Path, help="the directory holding simd/ and scalar/")
    ap.add_argument("--node", default="node")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    runners = [("native, best variant", [args.native], ""),
               ("native, TENSORVM_ISA=scalar", [args.native], "scalar"),
               ("wasm SIMD build, simd128", [args.node, str(args.wasm / "simd" / "tensorvm-run.js")], ""),
               ("wasm SIMD build, TENSORVM_ISA=scalar", [args.node, str(args.wasm / "simd" / "tensorvm-run.js")], "scalar"),
               ("wasm scalar build", [args.node, str(args.wasm / "scalar" / "tensorvm-run.js")], "")]
    print(f"{args.program}: greedy, --ids '{args.ids}', CPU ms per decode step (median of {args.repeats})")
    for label, exe, isa in runners:
        ms, tokens = step_ms(exe, args.program, args.ids, args.new_tokens, isa, args.repeats)
        print(f"| {label} | {ms:.1f} | ({tokens} steps)")
    for build in ("simd", "scalar"):
        for name in ("tensorvm-run", "tensorvm-web"):
            f = args.wasm / build / f"{name}.wasm"
            if f.exists():
                print(f"{f}: {f.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
