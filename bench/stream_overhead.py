"""Streaming overhead per generated token: the program's generate with no host
callback vs a no-op on_emit (the VM calling into Python each step), and
Program.generate without vs with a transformers-protocol streamer, interleaved.

    python bench/stream_overhead.py [--program DIR] [--threads 1] [--rounds 31] [--max-new-tokens 32]

Without --program it imports the tiny-marian test fixture, where a token costs the
least, so the overhead shows the most. Each round runs every mode once on the same
inputs, in turn, so drifting load hits them alike; medians over the rounds, of
wall time / generated positions. Outputs are checked equal across modes. On a
loaded machine single runs stall for tens of ms (the load average is printed):
use many rounds, and read the medians, not the means.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.soak import batches, cpu_name, tiny_marian  # noqa: E402


class NullStreamer:
    """transformers' streamer protocol, doing nothing (the cost is generate's, not the printing's)."""

    def put(self, value):
        pass

    def end(self):
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    args = ap.parse_args()

    import tensorvm

    path = Path(args.program) if args.program else tiny_marian(Path(tempfile.mkdtemp(prefix="tensorvm-stream-")))
    prog = tensorvm.load(path, num_threads=args.threads)
    fn = prog.module.function("generate")
    ids, mask = batches(prog.meta, 0, 1, batch=1, max_len=12)[0]
    print(f"CPU: {cpu_name()}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"program {path.name}, threads {args.threads}, batch 1, max_new_tokens = min_new_tokens = "
          f"{args.max_new_tokens}, median of {args.rounds} rounds")
    print(f"{'search':>8} {'tokens':>6} | {'run ms / token':>19} | {'generate ms / token':>19} | "
          f"{'overhead us / token':>21}")
    print(f"{'':>15} | {'off':>9} {'on_emit':>9} | {'off':>9} {'streamer':>9} | {'on_emit':>10} {'streamer':>10}")
    for name, beams in (("greedy", 1), ("beam 4", 4)):
        opts = dict(num_beams=beams, max_new_tokens=args.max_new_tokens, min_new_tokens=args.max_new_tokens)
        inputs = {"input_ids": ids, "attention_mask": mask, **opts}
        call = [inputs.get(p.name) for p in fn.params]
        modes = {
            "run": lambda: prog.run("generate", *call)[0],
            "on_emit": lambda: prog.run("generate", *call, on_emit=lambda channel, value: True)[0],
            "generate": lambda: prog.generate(ids, mask, **opts),
            "streamer": lambda: prog.generate(ids, mask, streamer=NullStreamer(), **opts),
        }
        results = {m: f() for m, f in modes.items()}  # warm-up, and the outputs to compare
        first = results["run"]
        if any(not np.array_equal(first, r) for r in results.values()):
            print(f"  OUTPUTS DIFFER for {name}: not timing", file=sys.stderr)
            return 1
        tokens = first.shape[1] - 1
        times = {m: [] for m in modes}
        for _ in range(args.rounds):
            for m, f in modes.items():
                t0 = time.perf_counter()
                f()
                times[m].append((time.perf_counter() - t0) / tokens)
        med = {m: statistics.median(v) * 1e3 for m, v in times.items()}
        print(f"{name:>8} {tokens:>6} | {med['run']:>9.3f} {med['on_emit']:>9.3f} | {med['generate']:>9.3f} "
              f"{med['streamer']:>9.3f} | {(med['on_emit'] - med['run']) * 1e3:>10.1f} "
              f"{(med['streamer'] - med['generate']) * 1e3:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
