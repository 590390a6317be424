"""Where one beam-search step of a Marian program spends its time, from the profiler's trace.

    python bench/beam_step_profile.py --program DIR [--beams 4] [--batch 1] [--new-tokens 32]
                                      [--threads 1] [--warmup 1] [--trace out.json] [--cpu-time]

Profiles `generate` (Program.profile, docs/tools.md), then takes the iterations of
the beam loop (the while_loop of `beam_search`) from the trace: each is one step.
Prints the step's time split by part (the decoder's `decode_step`, the logits
processors' `process`, the rest of `beam_step`: top-k, reordering, bookkeeping), by
op, and the instructions that cost most per step. The profiler's clock reads are
counted in each slice, so small ops look dearer than they are; the step's wall time
with no hook is printed beside it for that reason.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict

import numpy as np


def nest(events):
    """Each complete event with the names of the slices around it (outermost first)."""
    xs = sorted((e for e in events if e["ph"] == "X"), key=lambda e: (e["ts"], -e["dur"]))
    stack, out = [], []
    for e in xs:
        while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"]:
            stack.pop()
        out.append((e, list(stack)))
        stack.append(e)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", required=True, help="an imported Marian (or M2M100 / NLLB) program directory")
    ap.add_argument("--beams", type=int, default=4)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--trace", help="also write the Chrome trace here")
    ap.add_argument("--cpu-time", action="store_true", help="the thread's CPU time, not wall time (a busy machine)")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=INT",
                    help="another generate option, e.g. forced_bos_token_id=256057 or min_new_tokens=48 (repeatable)")
    ap.add_argument("--eos", type=int, default=0, help="the source's last token (Marian 0, M2M100 / NLLB 2)")
    args = ap.parse_args()

    import tensorvm

    prog = tensorvm.load(args.program, num_threads=args.threads)
    ids = np.tile(np.array([[5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, args.eos]]), (args.batch, 1))
    mask = np.ones_like(ids)
    opts = dict(num_beams=args.beams, max_new_tokens=args.new_tokens)
    for o in args.option:
        name, _, value = o.partition("=")
        opts[name] = int(value)

    prof = prog.profile("generate", ids, mask, warmup=args.warmup, cpu_time=args.cpu_time, **opts)
    if args.trace:
        prof.trace(args.trace)
    # The same call with no hook, for the step's real time.
    walls, cpus = [], []
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.thread_time()
        prog.generate(ids, mask, **opts)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.thread_time() - c0)
    events = prof.trace_events()["traceEvents"]

    steps = []
    parts = defaultdict(float)
    ops = defaultdict(lambda: [0, 0.0])
    lines = defaultdict(lambda: [0, 0.0, ""])
    for e, around in nest(events):
        if e["cat"] == "iteration" and around and around[-1]["cat"] == "loop" and around[-1]["args"]["function"] == "beam_search":
            steps.append(e["dur"])
            continue
        if e["cat"] != "op":
            continue
        it = next((i for i, a in enumerate(around) if a["cat"] == "iteration" and i > 0
                   and around[i - 1]["cat"] == "loop" and around[i - 1]["args"]["function"] == "beam_search"), None)
        if it is None:
            continue
        inside = {a["name"] for a in around[it + 1:] if a["cat"] == "function"}
        part = "decode_step" if "decode_step" in inside else "process" if "process" in inside else "beam_step (search)"
        parts[part] += e["dur"]
        ops[e["name"]][0] += 1
        ops[e["name"]][1] += e["dur"]
        key = (e["args"]["function"], e["args"]["line"])
        lines[key][0] += 1
        lines[key][1] += e["dur"]
        lines[key][2] = e["args"]["ir"]

    n = len(steps)
    if not n:
        print("no beam steps found in the trace (is this a Marian program with beam search?)", file=sys.stderr)
        return 1
    step_us = sum(steps) / n
    print(f"program {args.program}: generate, batch {args.batch}, {args.beams} beams, {args.new_tokens} new tokens, "
          f"{args.threads} thread(s), {'CPU' if args.cpu_time else 'wall'} time")
    print(f"generate with no hook (median of 3): {statistics.median(walls) * 1e3:.1f} ms wall, "
          f"{statistics.median(cpus) * 1e3:.1f} ms CPU time of this thread; under the profiler: "
          f"{prof.run_seconds * 1e3:.1f} ms")
    print(f"beam steps: {n}, {step_us / 1e3:.3f} ms per step under the profiler "
          f"(median {statistics.median(steps) / 1e3:.3f} ms)\n")
    print("| part of the step | ms per step | share |")
    print("|---|---:|---:|")
    accounted = 0.0
    for part, us in sorted(parts.items(), key=lambda kv: -kv[1]):
        accounted += us / n
        print(f"| {part} | {us / n / 1e3:.3f} | {100 * us / n / step_us:.1f}% |")
    print(f"| (interpreter, between instructions) | {(step_us - accounted) / 1e3:.3f} | "
          f"{100 * (step_us - accounted) / step_us:.1f}% |\n")
    print("| op | calls per step | ms per step | share of the step |")
    print("|---|---:|---:|---:|")
    for name, (count, us) in sorted(ops.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"| {name} | {count / n:.1f} | {us / n / 1e3:.3f} | {100 * us / n / step_us:.1f}% |")
    print()
    print("| function:line | calls per step | ms per step | share | instruction |")
    print("|---|---:|---:|---:|---|")
    for (fn, line), (count, us, text) in sorted(lines.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"| {fn}:{line} | {count / n:.1f} | {us / n / 1e3:.3f} | {100 * us / n / step_us:.1f}% | `{text}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
