"""Where a decode step's time goes, and how close it is to the memory-bandwidth limit.

    python bench/decode_profile.py [--checkpoint DIR] [--threads 2] [--steps 40] [--batch 1]

Runs `decode_step` of an imported Marian program directly (C++ VM, no Python per op):
- wall time per step (median, no hook installed);
- the same steps under the Profiler: time per op, and the sum of kernel times;
- interpreter overhead = 1 - (kernel time / wall time), an upper bound (the
  profiler's own clock reads land on the interpreter's side);
- weight bytes read per step (every weight matrix a linear reads, int8 ones with their
  scales) and the
  bandwidth that implies, next to a streaming-copy measurement of this machine.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def stream_bandwidth_gbs(repeats: int = 7) -> float:
    """Bytes moved per second by a large array copy (read + write), median."""
    a = np.ones(64 * 1024 * 1024 // 4, np.float32)  # 64 MB, beyond any cache
    b = np.empty_like(a)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(b, a)
        times.append(time.perf_counter() - t0)
    return 2 * a.nbytes / statistics.median(times) / 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint")
    ap.add_argument("--program", help="an imported program directory (skips the import)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=1)
    args = ap.parse_args()

    from tensorvm import _C

    if args.program:
        program_dir = Path(args.program)
    else:
        from tensorvm.pycompiler.import_hf import import_hf

        if args.checkpoint:
            ckpt = Path(args.checkpoint)
        else:
            sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
            from make_checkpoints import ensure_checkpoint

            ckpt = ensure_checkpoint("opus-mt-en-fr-random")
        program_dir = Path(tempfile.mkdtemp(prefix="tensorvm-profile-")) / "model.tvm"
        import_hf(ckpt, program_dir)

    program = _C.Program.load(str(program_dir))
    session = _C.Session(program, args.threads)
    ids = np.tile(np.array([[5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0]]), (args.batch, 1))
    mask = np.ones_like(ids)
    states = session.run("encode", [ids, mask])[0]
    source_mask = session.run("source_mask", [mask])[0]
    token = np.full((args.batch, 1), 3, np.int64)

    def steps(profiler=None):
        cache = session.run("init_cache", [states, args.batch, args.steps])[0]
        session.set_profiler(profiler)
        times = []
        for position in range(args.steps):
            t0 = time.perf_counter()
            session.run("decode_step", [cache, token, source_mask, position])
            times.append(time.perf_counter() - t0)
        session.set_profiler(None)
        return times

    steps()  # warm-up: pool, caches, threads
    wall = statistics.median(steps())
    prof = _C.Profiler()
    before = session.instructions_executed
    steps(prof)
    instructions = (session.instructions_executed - before) / args.steps
    ops = prof.ops()
    kernel = sum(s["seconds"] for s in ops.values()) / args.steps
    weight_bytes = sum(s["weight_bytes"] for s in ops.values()) / args.steps

    print(f"program {program_dir}, batch {args.batch}, threads {args.threads}, {args.steps} steps")
    print(prof.report())
    print(f"decode step: {wall * 1e3:.2f} ms wall (median, no hook), {instructions:.0f} instructions")
    print(f"kernel time under the profiler: {kernel * 1e3:.2f} ms per step")
    print(f"interpreter overhead (upper bound): {100 * max(0.0, 1 - kernel / wall):.2f}% of the step")
    bw = stream_bandwidth_gbs()
    achieved = weight_bytes / wall / 1e9
    print(f"weights read per step: {weight_bytes / 1e6:.1f} MB -> {achieved:.1f} GB/s achieved; "
          f"streaming copy on this machine: {bw:.1f} GB/s; fraction: {achieved / bw:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
