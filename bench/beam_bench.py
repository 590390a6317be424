"""Beam search (4 beams): sentences per second, tensorvm (C++ VM, one `generate` call
per batch, the whole search inside the program) vs transformers eager generate, on the
same checkpoint and inputs, outputs checked equal (sequences token for token,
sequences_scores within 1e-4).

    python bench/beam_bench.py [--checkpoint DIR] [--threads 2] [--repeats 5] [--max-new-tokens 24]

Without --checkpoint it builds the opus-mt-en-fr-shaped one (tests/fixtures; random
weights, so the translations are not meaningful and the length of each output is set by
max_new_tokens or EOS). Both engines use the checkpoint's generation_config (num_beams 4,
forced EOS, bad words, renormalize_logits) with --threads intra-op threads. Medians of
--repeats timed runs after one warm-up; sentences per second = batch / median seconds.
"""
from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from side_by_side import common_args, median_s, padded_sources, program_and_model  # noqa: E402


def main() -> int:
    ap = common_args(__doc__)
    ap.add_argument("--num-beams", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=24)
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--source-len", type=int, nargs="+", default=[12, 32])
    args = ap.parse_args()

    import torch

    ckpt, prog, model = program_and_model(args.checkpoint, args.threads, "tensorvm-beam-")
    pad, eos = prog.meta["pad_token_id"], prog.meta["eos_token_id"]
    opts = dict(num_beams=args.num_beams, max_new_tokens=args.max_new_tokens)
    rng = np.random.default_rng(0)
    load = os.getloadavg()[0]
    print(f"checkpoint {ckpt.name}, num_beams {args.num_beams}, threads {args.threads}, median of {args.repeats}, "
          f"max_new_tokens {args.max_new_tokens}, load average {load:.1f} on {os.cpu_count()} cores")
    if load > (os.cpu_count() or 1):
        print("  warning: the machine is busy; timings are unreliable (run on a quiet machine)")
    print(f"{'batch':>5} {'src':>4} {'out':>4} | {'sentences / s':>21} | {'ms / batch':>21} | speed-up")
    print(f"{'':>15} | {'tensorvm':>10} {'hf':>10} | {'tensorvm':>10} {'hf':>10} |")
    ratios = []
    for batch in args.batches:
        for length in args.source_len:
            ids, mask = padded_sources(rng, batch, length, pad, eos)
            tids, tmask = torch.tensor(ids), torch.tensor(mask)

            def hf_run():
                with torch.no_grad():
                    return model.generate(tids, attention_mask=tmask, output_scores=True, return_dict_in_generate=True,
                                          **opts)

            want = hf_run()
            got = prog.generate(ids, mask, output_scores=True, **opts)
            if (want.sequences.shape != got.sequences.shape or not (want.sequences.numpy() == got.sequences).all()
                    or np.abs(want.sequences_scores.numpy() - got.sequences_scores).max() > 1e-4):
                print(f"  OUTPUTS DIFFER at batch {batch} source {length}: not timing", file=sys.stderr)
                return 1
            t_hf = median_s(hf_run, args.repeats)
            t_vm = median_s(lambda: prog.generate(ids, mask, **opts), args.repeats)
            ratios.append(t_hf / t_vm)
            print(f"{batch:>5} {length:>4} {want.sequences.shape[1]:>4} | {batch / t_vm:>10.2f} {batch / t_hf:>10.2f} | "
                  f"{1000 * t_vm:>10.1f} {1000 * t_hf:>10.1f} | {t_hf / t_vm:>6.2f}x")
    print(f"median speed-up {statistics.median(ratios):.2f}x (tensorvm over transformers, same outputs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
