"""Whisper-shaped seeded random checkpoints: encoder ms, decoder ms/token and the
total for 64 greedy tokens on 30 s inputs, tensorvm (f32, int8) against
transformers' generic generate, outputs checked equal (f32).

    python -m bench.whisper_bench [--shape tiny|base] [--threads N]

Random weights (tests/fixtures/random_checkpoints.py's scaling); EOS is suppressed
(suppress_tokens) so every run makes exactly 64 tokens.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SHAPES = {
    "tiny": dict(d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
                 decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536),
    "base": dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                 decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048),
}
EOS, SOT = 50257, 50258
PROMPT = [SOT, 50259, 50360, 50364]  # start of transcript, <|en|>, <|transcribe|>, <|notimestamps|>


def checkpoint(shape: str, out: Path) -> Path:
    import torch
    import transformers

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))
    from random_checkpoints import _randomize

    torch.manual_seed(0)
    config = transformers.WhisperConfig(vocab_size=51865, num_mel_bins=80, max_source_positions=1500,
                                        max_target_positions=448, decoder_start_token_id=SOT, eos_token_id=EOS,
                                        pad_token_id=EOS, bos_token_id=EOS, **SHAPES[shape])
    model = transformers.WhisperForConditionalGeneration(config)
    _randomize(model, 0)
    model.generation_config = transformers.GenerationConfig(decoder_start_token_id=SOT, eos_token_id=EOS,
                                                            pad_token_id=EOS, suppress_tokens=[EOS])
    model.save_pretrained(out)
    return out


def best(fn, repeats=3):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1000, out


def main(argv=None):
    import torch
    import transformers
    from transformers.generation.utils import GenerationMixin

    import tensorvm

    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    tmp = Path(tempfile.mkdtemp(prefix="whisper-bench-"))
    ckpt = checkpoint(a.shape, tmp / "ckpt")
    feats = np.random.default_rng(0).standard_normal((1, 80, 3000)).astype(np.float32)
    prompt = np.array([PROMPT], np.int64)
    hf = transformers.WhisperForConditionalGeneration.from_pretrained(ckpt, attn_implementation="eager").eval()
    with torch.no_grad():
        enc_ms, _ = best(lambda: hf.model.encoder(torch.from_numpy(feats)))
        tot_ms, want = best(lambda: GenerationMixin.generate(hf, input_features=torch.from_numpy(feats),
                                                             decoder_input_ids=torch.from_numpy(prompt),
                                                             max_new_tokens=64, num_beams=1), 2)
    rows = [("transformers f32", enc_ms, tot_ms)]
    for q in (None, "int8"):
        out = tmp / f"w-{q}.tvm"
        tensorvm.import_hf(ckpt, out, quantize=q)
        prog = tensorvm.load(out, num_threads=a.threads)
        enc, _ = best(lambda: prog.run("encode", feats, np.ones((1, 3000), np.int64)))
        tot, got = best(lambda: prog.generate(feats, decoder_input_ids=prompt, max_new_tokens=64, num_beams=1), 2)
        if q is None and not np.array_equal(got, want.numpy()):
            raise SystemExit("tensorvm f32 and transformers differ")
        rows.append((f"tensorvm {q or 'f32'}", enc, tot))
    print(f"whisper-{a.shape}-shaped, 30 s, greedy 64 tokens, {a.threads} thread(s)")
    print("| engine | encoder ms | decoder ms/token | total ms |")
    print("|---|---|---|---|")
    for name, enc, tot in rows:
        print(f"| {name} | {enc:.0f} | {(tot - enc) / 64:.2f} | {tot:.0f} |")


if __name__ == "__main__":
    main()
