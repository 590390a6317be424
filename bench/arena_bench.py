"""The memory arena against the pool (docs/runtime.md, "A memory arena"): for Marian
generation (the opus-mt-en-fr-shaped program of the bench cache), greedy and beam 4,
batch 1, it prints

- what `tensorvm inspect --memory` measures: the arena a run needs and its peak of live
  tensor bytes (worst case: min_new_tokens = max_new_tokens, no early end);
- today's pool on the same run: its peak of live bytes and of held bytes (live plus
  cached blocks), and each mode's peak RSS in a fresh process (weights are mapped in
  both, so the RSS difference is the allocator's);
- decode time per run, pool vs arena, interleaved in one process (CPU time of the
  calling thread, medians), with the outputs checked bit-identical.

    python3 bench/arena_bench.py [--program DIR] [--max-new-tokens 32] [--source-len 12] [--repeats 5] [--beams 1 4]
    python3 bench/arena_bench.py --baseline OTHER_BUILD/pkg [--rounds 3] [--beams 1 4]   # the default (no arena): this build vs another

--baseline times the default path (no arena, tensorvm._C only, each --beams) of this build and
of another build's package directory (a checkout before the arena, built with
.ci/dev-build), in alternating processes, to show the pool's path did not slow down (the
arena's change, then the pool's size classes: bench/results/2026-11-24-pool.md).

Without --program it uses $TENSORVM_BENCH_CACHE (default /work/bench-cache)'s
opus-mt-en-fr-random-*/tensorvm program (bench/checkpoint.py builds it).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def default_program() -> str:
    cache = os.environ.get("TENSORVM_BENCH_CACHE", "/work/bench-cache")
    found = sorted(glob.glob(os.path.join(cache, "opus-mt-en-fr-random-*", "tensorvm")))
    if not found:
        sys.exit(f"no opus-mt-en-fr-random-*/tensorvm under {cache}: pass --program or run bench/compare.py once")
    return found[0]


def source_ids(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 50000, size=(1, n), dtype=np.int64)
    ids[0, -1] = 0  # eos
    return ids


def named_inputs(args, beams: int) -> dict:
    ids = source_ids(args.source_len)
    return {"input_ids": ids, "attention_mask": np.ones_like(ids), "num_beams": beams,
            "max_new_tokens": args.max_new_tokens, "min_new_tokens": args.max_new_tokens}


def positional(program, named: dict) -> list:
    fn = program.module.function("generate")
    return [named.get(p.name) for p in fn.params]


def vm_hwm_kib() -> tuple[int, int]:
    status = open("/proc/self/status").read().split("\n")
    get = lambda key: int(next(line for line in status if line.startswith(key)).split()[1])  # noqa: E731
    return get("VmRSS:"), get("VmHWM:")


def child(args) -> int:
    """One mode in a fresh process: peak RSS after one generate."""
    from tensorvm import load

    program = load(args.program, arena_bytes=args.arena_bytes)
    named = named_inputs(args, args.child_beams)
    rss_loaded, _ = vm_hwm_kib()
    program.session.run_named("generate", named)
    stats = program.session.memory_stats()
    rss, hwm = vm_hwm_kib()
    print(json.dumps({"rss_loaded_kib": rss_loaded, "rss_kib": rss, "hwm_kib": hwm, "stats": stats}))
    return 0


def run_child(args, beams: int, arena_bytes: int) -> dict:
    cmd = [sys.executable, __file__, "--program", args.program, "--source-len", str(args.source_len),
           "--max-new-tokens", str(args.max_new_tokens), "--child-beams", str(beams), "--arena-bytes", str(arena_bytes)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def time_default(args) -> int:
    """In a process of one build: median CPU ms of generate (beam args.time_default), no arena, _C only."""
    from tensorvm import _C

    session = _C.Session(_C.Program.load(args.program), 1)
    named = named_inputs(args, args.time_default)
    session.run_named("generate", named)
    print(statistics.median(cpu_ms(lambda: session.run_named("generate", named)) for _ in range(3)))
    return 0


def baseline(args) -> int:
    this = os.environ.get("PYTHONPATH", "")
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {args.max_new_tokens} new tokens")
    for beams in args.beams:
        times: dict = {"baseline": [], "this build": []}
        for _ in range(args.rounds):
            for name, path in (("baseline", args.baseline), ("this build", this)):
                cmd = [sys.executable, __file__, "--program", args.program, "--source-len", str(args.source_len),
                       "--max-new-tokens", str(args.max_new_tokens), "--time-default", str(beams)]
                out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                                     env={**os.environ, "PYTHONPATH": path})
                times[name].append(float(out.stdout.strip().splitlines()[-1]))
        b, t = statistics.median(times["baseline"]), statistics.median(times["this build"])
        print(f"beam {beams} generate, no arena, CPU ms (median of {args.rounds} processes x 3 runs): baseline {b:.1f} "
              f"{[round(x, 1) for x in times['baseline']]}, this build {t:.1f} {[round(x, 1) for x in times['this build']]}, "
              f"this/baseline {t / b:.3f}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


def cpu_ms(fn) -> float:
    t0 = time.thread_time()
    fn()
    return (time.thread_time() - t0) * 1e3


def mib(n: float) -> str:
    return f"{n / 2**20:.2f} MiB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--program", default=None)
    ap.add_argument("--source-len", type=int, default=12)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--beams", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--json", dest="json_out", help="write the figures here too")
    ap.add_argument("--baseline", metavar="PKG_DIR", help="time the default path against another build's package dir")
    ap.add_argument("--rounds", type=int, default=3, help="with --baseline: processes per build")
    ap.add_argument("--time-default", type=int, default=0, help=argparse.SUPPRESS)  # the beam count
    ap.add_argument("--child-beams", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--arena-bytes", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.program = args.program or default_program()
    if args.child_beams:
        return child(args)
    if args.time_default:
        return time_default(args)
    if args.baseline:
        return baseline(args)

    from tensorvm import _C, load

    print(f"program {args.program}: source {args.source_len} tokens, batch 1, {args.max_new_tokens} new tokens "
          f"(min_new_tokens = max_new_tokens: every step runs), 1 thread")
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores shared: times are CPU time, noisy)")
    rows = []
    for beams in args.beams:
        named = named_inputs(args, beams)
        pool = load(args.program)
        need = pool.memory("generate", *positional(pool, named))
        arena = load(args.program, arena_bytes=need["arena_bytes"])
        # Copies: the VM's results are numpy views that keep their tensors carved in the
        # arena (docs/runtime.md), and the next runs need that room.
        want = [np.array(v, copy=True) for v in pool.session.run_named("generate", named)]  # warms the pool
        got = [np.array(v, copy=True) for v in arena.session.run_named("generate", named)]
        same = all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(want, got))
        pool.session.reset_memory_peak()
        arena.session.reset_memory_peak()
        t_pool, t_arena = [], []
        for _ in range(args.repeats):  # interleaved, so load changes hit both alike
            t_pool.append(cpu_ms(lambda: pool.session.run_named("generate", named)))
            t_arena.append(cpu_ms(lambda: arena.session.run_named("generate", named)))
        ps, arena_stats = pool.session.memory_stats(), arena.session.memory_stats()
        pool_rss, arena_rss = run_child(args, beams, 0), run_child(args, beams, need["arena_bytes"])
        row = {
            "beams": beams, "tokens": int(np.asarray(want[0]).shape[-1]), "bit_identical": bool(same),
            "arena_bytes": need["arena_bytes"], "arena_peak_bytes": need["peak_bytes"],
            "largest_tensor": need["largest_tensor"], "allocations": need["allocations"],
            "high_water_at": need["high_water_at"], "arena_run_peak": arena_stats["peak_in_use"],
            "pool_peak_live": ps["peak_live"], "pool_peak_held": ps["peak_held"],
            "pool_fresh_allocations": ps["fresh_allocations"], "pool_evictions": ps.get("evictions", 0),
            "rss_pool_hwm_kib": pool_rss["hwm_kib"], "rss_arena_hwm_kib": arena_rss["hwm_kib"],
            "rss_loaded_kib": pool_rss["rss_loaded_kib"],
            "ms_pool": statistics.median(t_pool), "ms_arena": statistics.median(t_arena),
        }
        rows.append(row)
        print(f"\nbeam {beams}: {row['tokens']} output positions, arena output bit-identical to pool: {same}")
        print(f"  arena needed (inspect --memory)  {mib(row['arena_bytes'])}  (peak live {mib(row['arena_peak_bytes'])}, "
              f"largest tensor {mib(row['largest_tensor'])}, {row['allocations']} tensors)")
        print(f"  high-water at                    {row['high_water_at']}")
        print(f"  pool: peak live {mib(row['pool_peak_live'])}, peak held (live + cached) {mib(row['pool_peak_held'])}, "
              f"{row['pool_fresh_allocations']} fresh blocks, {row['pool_evictions']} freed while cached")
        print(f"  peak RSS, fresh process          pool {row['rss_pool_hwm_kib'] / 1024:.1f} MiB, arena "
              f"{row['rss_arena_hwm_kib'] / 1024:.1f} MiB (after load, before running: "
              f"{row['rss_loaded_kib'] / 1024:.1f} MiB)")
        print(f"  CPU ms per generate (median of {args.repeats})  pool {row['ms_pool']:.1f}, arena {row['ms_arena']:.1f}, "
              f"arena/pool {row['ms_arena'] / row['ms_pool']:.3f}")
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}; kernels: {_C.describe_cpu().splitlines()[0]}")
    if args.json_out:
        with open(args.json_out + ".tmp", "w") as f:
            json.dump(rows, f, indent=2)
        os.replace(args.json_out + ".tmp", args.json_out)
    return 0 if all(r["bit_identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
