"""Each fused op against the two ops it replaces, alone, on opus-mt shapes: one-instruction
programs run in the VM on one thread, interleaved, timed in thread CPU time (comparable
on a busy machine); the outputs are checked equal first.

    python bench/fused_ops_bench.py [--rounds 15] [--rows 32 192]

32 rows: a beam-4 batch-8 decode step; 192: the encoder over 8 sources of 24 tokens.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

PAIRS = {
    "add_layer_norm": ("x: Tensor, r: Tensor, w: Tensor, b: Tensor",
                       "    s = add(x, r)\n    y = layer_norm(s, w, b, eps=1e-05)\n",
                       "    y = add_layer_norm(x, r, w, b, eps=1e-05)\n"),
    "linear_act": ("x: Tensor, w: Tensor, b: Tensor",
                   "    s = linear(x, w, b)\n    y = silu(s)\n",
                   '    y = linear_act(x, w, b, "silu")\n'),
}


def session(params: str, body: str):
    from tensorvm._C import Program, Session

    return Session(Program.from_text(f"# tensorvm ir 1\ndef f({params}) -> Tensor:\n{body}    return y\n", ""), 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--rows", type=int, nargs="+", default=[32, 192])
    args = ap.parse_args()
    import tensorvm

    rng = np.random.default_rng(0)
    print(f"{tensorvm._C.cpu_info()['active']} kernels, one thread, medians of {args.rounds} rounds (thread CPU time)")
    for rows in args.rows:
        f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
        inputs = {"add_layer_norm": ([f32(rows, 512), f32(rows, 512), f32(512), f32(512)], 400),
                  "linear_act": ([f32(rows, 512), f32(2048, 512), f32(2048)], 20)}
        for op, (params, two, one) in PAIRS.items():
            xs, n = inputs[op]
            s2, s1 = session(params, two), session(params, one)
            if not np.array_equal(np.asarray(s2.run("f", xs)[0]), np.asarray(s1.run("f", xs)[0])):
                print(f"{op}: OUTPUTS DIFFER", file=sys.stderr)
                return 1
            t = ([], [])
            for _ in range(args.rounds):
                for k, s in enumerate((s2, s1)):
                    c = time.thread_time()
                    for _ in range(n):
                        s.run("f", xs)
                    t[k].append((time.thread_time() - c) / n * 1e6)
            a, b = statistics.median(t[0]), statistics.median(t[1])
            print(f"  {rows:>4} rows  {op:<15} {a:>9.1f} us (two ops) -> {b:>9.1f} us (fused)  {a / b:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
