"""T5-shaped seeded random checkpoints (t5-small: v1.0, relu, tied; flan-t5-small: v1.1,
gated-gelu, untied): one generate call on a padded batch, greedy and beam 4, tensorvm
(f32, int8) against transformers on the same checkpoint and sources, f32 tokens checked
equal to transformers'.

    python -m bench.t5_bench [--shape t5-small|flan-t5-small|all] [--threads N] [--repeats N]
                             [--batch 4] [--source 48] [--new-tokens 32]

Each figure is the median of --repeats calls after one warm-up, in wall-clock ms and in
the process's CPU ms (which a shared machine's other load inflates less), with the
ratio transformers / tensorvm of each. EOS is banned until the last token
(min_new_tokens = max_new_tokens), so every engine makes the same number of tokens.
Weights: tests/fixtures/random_checkpoints.py's scaling (q folded by 1/sqrt(d_kv), as
T5 initialises it).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
SPECIAL = dict(pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
SHAPES = {  # the checkpoints' config.json
    "t5-small": dict(vocab_size=32128, d_model=512, d_kv=64, num_heads=8, d_ff=2048, num_layers=6,
                     num_decoder_layers=6, feed_forward_proj="relu"),
    "flan-t5-small": dict(vocab_size=32128, d_model=512, d_kv=64, num_heads=6, d_ff=1024, num_layers=8,
                          num_decoder_layers=8, feed_forward_proj="gated-gelu", tie_word_embeddings=False),
}


def checkpoint(shape: str, out: Path) -> Path:
    import torch
    import transformers

    sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
    from random_checkpoints import _randomize

    torch.manual_seed(0)
    config = transformers.T5Config(**SHAPES[shape], **SPECIAL)
    model = transformers.T5ForConditionalGeneration(config)
    if not SHAPES[shape].get("tie_word_embeddings", True):  # transformers 5 builds it tied: untie
        model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone())
    _randomize(model, 0)
    model.generation_config = transformers.GenerationConfig(**SPECIAL)
    model.save_pretrained(out)
    return out


def sources(batch: int, length: int):
    """Right-padded sources of varied lengths (the first `length`), ending with </s>, pad 0."""
    from bench.side_by_side import padded_sources

    # padded_sources draws tokens below its pad id and pads with it: draw below 1000, then pad with 0
    ids, mask = padded_sources(np.random.default_rng(0), batch, length, 1000, SPECIAL["eos_token_id"])
    ids[mask == 0] = SPECIAL["pad_token_id"]
    return ids, mask


def timed(fn, repeats: int):
    """(median wall ms, median process CPU ms, output) of `repeats` calls after a warm-up."""
    from bench.whisper_bench import median

    fn()
    return median(fn, repeats)


def run(shape: str, a, tmp: Path) -> list:
    import torch
    import transformers

    import tensorvm

    ckpt = checkpoint(shape, tmp / shape)
    ids, mask = sources(a.batch, a.source)
    hf = transformers.T5ForConditionalGeneration.from_pretrained(ckpt, attn_implementation="eager").eval()
    progs = {}
    for q in (None, "int8"):
        tensorvm.import_hf(ckpt, tmp / f"{shape}-{q}.tvm", quantize=q)
        progs[q or "f32"] = tensorvm.load(tmp / f"{shape}-{q}.tvm", num_threads=a.threads)
    rows = []
    for beams in (1, 4):
        kw = dict(max_new_tokens=a.new_tokens, min_new_tokens=a.new_tokens, num_beams=beams)

        def hf_generate():
            with torch.no_grad():
                return hf.generate(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                                   do_sample=False, **kw).numpy()

        hf_ms, hf_cpu, want = timed(hf_generate, a.repeats)
        for name, prog in progs.items():
            ms, cpu, got = timed(lambda: prog.generate(ids, mask, **kw), a.repeats)
            same = got.shape == want.shape and bool((got == want).all())
            if name == "f32" and not same:
                raise SystemExit(f"{shape} beam {beams}: tensorvm f32 and transformers differ")
            rows.append((shape, beams, name, ms, cpu, hf_ms, hf_cpu, same))
    return rows


def main(argv=None):
    import torch
    import transformers

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=[*SHAPES, "all"], default="all")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--source", type=int, default=48, help="the longest source (the others are shorter)")
    ap.add_argument("--new-tokens", type=int, default=32)
    a = ap.parse_args(argv)
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(a.threads)
    tmp = Path(tempfile.mkdtemp(prefix="t5-bench-"))
    rows = [r for s in (SHAPES if a.shape == "all" else [a.shape]) for r in run(s, a, tmp)]
    print(f"batch {a.batch}, sources up to {a.source} tokens, {a.new_tokens} new tokens, {a.threads} thread(s), "
          f"medians of {a.repeats}")
    print("| shape | beams | tensorvm | ms | CPU ms | transformers ms | CPU ms | wall ratio | CPU ratio | tokens = transformers' |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for shape, beams, name, ms, cpu, hf_ms, hf_cpu, same in rows:
        print(f"| {shape} | {beams} | {name} | {ms:.0f} | {cpu:.0f} | {hf_ms:.0f} | {hf_cpu:.0f} | "
              f"{hf_ms / ms:.2f}x | {hf_cpu / cpu:.2f}x | {'yes' if same else 'no'} |")


if __name__ == "__main__":
    main()
