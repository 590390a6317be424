"""A decoder prompt prefilled in one pass vs fed token by token (ms, medians).

    python bench/prefill_bench.py [--checkpoint DIR] [--threads 2] [--repeats 5] [--prompt-len 32]

Both fill a fresh KV cache (cross-attention K/V already computed) with the same
prompt: `prefill(cache, prompt)` is one call per layer over all positions;
token by token is `decode_step` once per position (what generation did before
decoder prompts had a prefill). The cache each leaves behind is checked: the
next step's logits agree within 1e-3. Without --checkpoint it runs on the
opus-mt-en-fr-shaped one (tests/fixtures). Medians of --repeats runs after one
warm-up; the CPU name is printed with the figures.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from side_by_side import common_args, median_s, program_and_model  # noqa: E402
from soak import cpu_name  # noqa: E402


def main() -> int:
    ap = common_args(__doc__)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 4])
    args = ap.parse_args()

    ckpt, prog, _ = program_and_model(args.checkpoint, args.threads, "tensorvm-prefill-")
    meta = prog.meta
    pad, eos, start = meta["pad_token_id"], meta["eos_token_id"], meta["decoder_start_token_id"]
    p = args.prompt_len
    rng = np.random.default_rng(0)
    print(f"CPU {cpu_name()}, checkpoint {ckpt.name}, threads {args.threads}, median of {args.repeats}, "
          f"prompt {p} tokens")
    print(f"{'batch':>5} | {'one pass ms':>11} | {'token by token ms':>17} | speed-up")
    for batch in args.batch:
        ids = rng.integers(2, pad, size=(batch, 12))
        ids[:, -1] = eos
        mask = np.ones_like(ids)
        prompt = np.concatenate([np.full((batch, 1), start), rng.integers(2, pad, size=(batch, p))], axis=1)
        states, smask = prog.run("encode", ids, mask), prog.run("source_mask", mask)

        def fresh():
            return prog.run("init_cache", states, batch, p + 1)

        def one_pass(cache=None):
            cache = fresh() if cache is None else cache
            return prog.run("prefill", cache, prompt[:, :p], smask)

        def stepped(cache=None):
            cache = fresh() if cache is None else cache
            for pos in range(p):
                prog.run("decode_step", cache, prompt[:, pos:pos + 1], smask, pos)
            return cache

        a, b = one_pass(), stepped()
        la = prog.run("decode_step", a, prompt[:, p:], smask, p)
        lb = prog.run("decode_step", b, prompt[:, p:], smask, p)
        if not np.allclose(la, lb, atol=1e-3, rtol=0):
            print(f"  the caches differ at batch {batch} (max |diff| {np.abs(la - lb).max():.3g}): not timing",
                  file=sys.stderr)
            return 1
        init_ms = 1000 * median_s(fresh, args.repeats)  # both pay it; taken out of both
        one_ms = 1000 * median_s(one_pass, args.repeats) - init_ms
        step_ms = 1000 * median_s(stepped, args.repeats) - init_ms
        print(f"{batch:>5} | {one_ms:>11.1f} | {step_ms:>17.1f} | {step_ms / one_ms:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
