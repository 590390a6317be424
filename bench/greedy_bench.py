"""Greedy decoding: ms per generated token and encoder ms, tensorvm (C++ VM) vs
transformers eager generate, on the same checkpoint and inputs, outputs checked equal.

    python bench/greedy_bench.py [--checkpoint DIR] [--threads 2] [--repeats 5] [--max-new-tokens 32]

Without --checkpoint it builds the opus-mt-en-fr-shaped one (tests/fixtures). Medians
of --repeats timed runs after one warm-up. ms per token = generate wall time / number
of generated positions (the longest row; finished rows are padded, as in transformers).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from side_by_side import common_args, median_s, program_and_model  # noqa: E402


def median_ms(fn, repeats: int) -> float:
    return 1000 * median_s(fn, repeats)


def main() -> int:
    ap = common_args(__doc__)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--source-len", type=int, nargs="+", default=[8, 32])
    args = ap.parse_args()

    import torch

    ckpt, prog, model = program_and_model(args.checkpoint, args.threads, "tensorvm-greedy-")
    pad, eos = prog.meta["pad_token_id"], prog.meta["eos_token_id"]
    rng = np.random.default_rng(0)
    print(f"checkpoint {ckpt.name}, threads {args.threads}, median of {args.repeats}, "
          f"max_new_tokens {args.max_new_tokens}")
    print(f"{'batch':>5} {'src':>4} {'new':>4} | {'encoder ms':>21} | {'ms / generated token':>23} | speed-up")
    print(f"{'':>16} | {'tensorvm':>10} {'hf':>10} | {'tensorvm':>11} {'hf':>11} |")
    for batch in (1, 4):
        for length in args.source_len:
            ids = rng.integers(2, pad, size=(batch, length))
            ids[:, -1] = eos
            mask = np.ones_like(ids)
            tids, tmask = torch.tensor(ids), torch.tensor(mask)
            with torch.no_grad():
                want = model.generate(tids, attention_mask=tmask, num_beams=1, do_sample=False,
                                      max_new_tokens=args.max_new_tokens).numpy()
            got = prog.generate(ids, mask, num_beams=1, max_new_tokens=args.max_new_tokens)
            if want.shape != got.shape or not (want == got).all():
                print(f"  OUTPUTS DIFFER at batch {batch} source {length}: not timing", file=sys.stderr)
                return 1
            steps = want.shape[1] - 1
            enc_tvm = median_ms(lambda: prog.run("encode", ids, mask), args.repeats)
            encoder = model.get_encoder()
            with torch.no_grad():
                enc_hf = median_ms(lambda: encoder(input_ids=tids, attention_mask=tmask), args.repeats)
                gen_hf = median_ms(lambda: model.generate(tids, attention_mask=tmask, num_beams=1, do_sample=False,
                                                          max_new_tokens=args.max_new_tokens), args.repeats)
            gen_tvm = median_ms(lambda: prog.generate(ids, mask, num_beams=1, max_new_tokens=args.max_new_tokens),
                                args.repeats)
            print(f"{batch:>5} {length:>4} {steps:>4} | {enc_tvm:>10.2f} {enc_hf:>10.2f} | "
                  f"{gen_tvm / steps:>11.2f} {gen_hf / steps:>11.2f} | {gen_hf / gen_tvm:>6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
