"""The graph passes' effect on opus-mt: the program imported with `--no-optimize`
against the default pipeline (folding, CSE, DCE, fusions), side by side in one run on
the same inputs, beam search, outputs checked equal token for token.

    TENSORVM_BENCH_CACHE=/work/bench-cache python bench/fusion_bench.py \
        [--checkpoint DIR] [--threads 2] [--repeats 7] [--batch 8] [--num-beams 4] \
        [--source-len 24] [--max-new-tokens 24]

Default checkpoint: the opus-mt-en-fr-shaped one in $TENSORVM_BENCH_CACHE (else the
fixture's). Prints the statements of each program (static count, and per function that
changed), the instructions one generate call executes and the profiled time of the ops
whose count changed (from the profiler after one warm-up; thread CPU time with
--threads 1, else wall time), then
sentences/s: each round runs both programs (alternating which goes first), timing wall
and process CPU seconds; medians over --repeats rounds and the median of the per-round
ratios, which is what to trust on a shared machine.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checkpoint import cache_root, resolve  # noqa: E402
from side_by_side import padded_sources  # noqa: E402


def default_checkpoint() -> Path:
    cached = sorted(cache_root().glob("opus-mt-en-fr-random-*/checkpoint"))
    return cached[0] if cached else resolve("opus-mt-en-fr-random")


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", help="a checkpoint directory (default: opus-mt-en-fr-shaped, see above)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--num-beams", type=int, default=4)
    ap.add_argument("--source-len", type=int, default=24)
    ap.add_argument("--max-new-tokens", type=int, default=24)
    ap.add_argument("--profile-repeats", type=int, default=3, help="profiled generate calls per program")
    args = ap.parse_args()

    import tensorvm
    from tensorvm.pycompiler.import_hf import import_hf
    from tensorvm.pycompiler.passes import count_statements

    ckpt = Path(args.checkpoint) if args.checkpoint else default_checkpoint()
    work = Path(tempfile.mkdtemp(prefix="tensorvm-fusion-"))
    progs = {}
    for name, optimize in (("traced", False), ("optimized", True)):
        import_hf(ckpt, work / f"{name}.tvm", optimize=optimize)
        progs[name] = tensorvm.load(work / f"{name}.tvm", num_threads=args.threads)
    traced, optimized = progs["traced"], progs["optimized"]
    pad, eos = traced.meta["pad_token_id"], traced.meta["eos_token_id"]
    ids, mask = padded_sources(np.random.default_rng(0), args.batch, args.source_len, pad, eos)
    opts = dict(num_beams=args.num_beams, max_new_tokens=args.max_new_tokens)
    print(f"checkpoint {ckpt}, batch {args.batch}, num_beams {args.num_beams}, source {args.source_len}, "
          f"max_new_tokens {args.max_new_tokens}, threads {args.threads}, load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores, {tensorvm._C.cpu_info()['active']} kernels")

    print(f"\nstatements: traced {count_statements(traced.module)}, optimized {count_statements(optimized.module)}")
    for f in traced.module.functions:
        a = sum(1 for _ in f.body) - 1
        g = optimized.module.function(f.name) if f.name in optimized.module.function_names else None
        b = sum(1 for _ in g.body) - 1 if g else 0
        if a != b:
            print(f"  {f.name:<20} {a:>4} -> {b:>4}")

    want = traced.generate(ids, mask, **opts)
    got = optimized.generate(ids, mask, **opts)
    if np.asarray(want).shape != np.asarray(got).shape or not (np.asarray(want) == np.asarray(got)).all():
        print("OUTPUTS DIFFER between the traced and the optimized program: not timing", file=sys.stderr)
        return 1
    print(f"outputs: the same {np.asarray(got).shape} tokens")

    named = dict(input_ids=ids, attention_mask=mask, **opts)
    executed = {}
    for name, p in progs.items():
        # One thread: its CPU time is all the work, and what a busy machine leaves comparable.
        prof = p.profile("generate", trace=False, warmup=1, repeat=args.profile_repeats, cpu_time=args.threads == 1,
                         **named)
        executed[name] = (sum(v["count"] for v in prof.ops.values()) // args.profile_repeats, prof.ops)
    print(f"instructions executed by one generate call: traced {executed['traced'][0]}, "
          f"optimized {executed['optimized'][0]} ({executed['optimized'][0] / executed['traced'][0]:.3f}x)")
    clock = "thread CPU" if args.threads == 1 else "wall"
    print(f"  {'op':<16} {'count':>17} | {f'profiled ms per generate ({clock})':>31}")
    ops = sorted(set(executed["traced"][1]) | set(executed["optimized"][1]))
    spent = [0.0, 0.0]
    for op in ops:
        a, b = (executed[n][1].get(op, {"count": 0, "seconds": 0.0}) for n in ("traced", "optimized"))
        if a["count"] != b["count"]:
            ms = [1000 * x["seconds"] / args.profile_repeats for x in (a, b)]
            spent = [spent[0] + ms[0], spent[1] + ms[1]]
            print(f"  {op:<16} {a['count'] // args.profile_repeats:>7} -> {b['count'] // args.profile_repeats:>7} | "
                  f"{ms[0]:>13.1f} -> {ms[1]:>13.1f}")
    print(f"  {'these ops':<16} {'':>17} | {spent[0]:>13.1f} -> {spent[1]:>13.1f}")

    for p in progs.values():  # warm-up
        p.generate(ids, mask, **opts)
    t = {n: ([], []) for n in progs}
    ratios_wall, ratios_cpu = [], []
    for r in range(args.repeats):
        order = list(progs) if r % 2 == 0 else list(progs)[::-1]
        for n in order:
            w, c, _ = timed(lambda: progs[n].generate(ids, mask, **opts))
            t[n][0].append(w)
            t[n][1].append(c)
        ratios_wall.append(t["traced"][0][-1] / t["optimized"][0][-1])
        ratios_cpu.append(t["traced"][1][-1] / t["optimized"][1][-1])
    med = {n: (statistics.median(t[n][0]), statistics.median(t[n][1])) for n in progs}
    print(f"\n{'program':<10} | {'sentences/s (wall)':>18} | {'sentences per CPU-s':>19} | median of {args.repeats}")
    for n in progs:
        print(f"{n:<10} | {args.batch / med[n][0]:>18.2f} | {args.batch / med[n][1]:>19.2f} |")
    print(f"optimized over traced, median of per-round ratios: wall {statistics.median(ratios_wall):.3f}x, "
          f"CPU {statistics.median(ratios_cpu):.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
