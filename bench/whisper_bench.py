"""Whisper-shaped seeded random checkpoints: encoder ms, decoder ms/token and the
total for 64 greedy tokens on 30 s inputs, tensorvm (f32, int8, w8a8) against
transformers' generic generate, outputs checked equal (f32).

    python -m bench.whisper_bench [--shape tiny|base] [--threads N] [--encoder-only] [--repeats N]

Each figure is the median of a few runs, in wall-clock ms and in the process's CPU ms
(which a shared machine's other load inflates less), with each engine's encoder time
as a ratio to tensorvm f32's from the same run. --encoder-only skips generation.

Random weights (tests/fixtures/random_checkpoints.py's scaling); EOS is suppressed
(suppress_tokens) so transformers and tensorvm make exactly 64 tokens. CTranslate2
(converted with a stub vocabulary) does not apply a suppressed EOS the same way and
may stop earlier: its row says how many tokens it made and how many agree, and its
ms/token divides by its own count.
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
    # smoke runs (bench/whisper_cpp_bench.py --quick): rows a multiple of ggml's block of 32, FFN 4 x
    # d_model (whisper.cpp assumes it)
    "toy": dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                decoder_attention_heads=2, encoder_ffn_dim=256, decoder_ffn_dim=256),
}
EOS, SOT = 50257, 50258
PROMPT = [SOT, 50259, 50359, 50363]  # start of transcript, <|en|>, <|transcribe|>, <|notimestamps|>
# Whisper's multilingual special tokens (CTranslate2 reads them by name)
SPECIAL = {50257: "<|endoftext|>", 50258: "<|startoftranscript|>", 50259: "<|en|>", 50358: "<|translate|>",
           50359: "<|transcribe|>", 50360: "<|startoflm|>", 50361: "<|startofprev|>", 50362: "<|nocaptions|>",
           50363: "<|notimestamps|>"}
VOCAB = 51865


def checkpoint(shape: str, out: Path) -> Path:
    import torch
    import transformers

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))
    from random_checkpoints import _randomize

    torch.manual_seed(0)
    config = transformers.WhisperConfig(vocab_size=VOCAB, num_mel_bins=80, max_source_positions=1500,
                                        max_target_positions=448, decoder_start_token_id=SOT, eos_token_id=EOS,
                                        pad_token_id=EOS, bos_token_id=EOS, **SHAPES[shape])
    model = transformers.WhisperForConditionalGeneration(config)
    _randomize(model, 0)
    model.generation_config = transformers.GenerationConfig(decoder_start_token_id=SOT, eos_token_id=EOS,
                                                            pad_token_id=EOS, suppress_tokens=[EOS])
    model.save_pretrained(out)
    return out


def ctranslate2_model(ckpt: Path, out: Path, quantization: str, threads: int, names: list | None = None):
    """CTranslate2's Whisper converted from the checkpoint; the checkpoint has no tokenizer
    files, so the converter gets a stub vocabulary naming ids by their decimal strings,
    Whisper's special tokens by theirs (as bench/engines/ctranslate2_engine.py does for Marian).
    `names`: another vocabulary (CTranslate2 calls a model multilingual when it has all 51865)."""
    import ctranslate2
    from ctranslate2.converters import TransformersConverter

    names = names or [SPECIAL.get(i, str(i)) for i in range(50364)]  # the loader names timestamps after these
    langs = names[50259:50358] if len(names) >= 51865 else [SPECIAL[50259]]  # lang_ids (> 1: multilingual)

    class Tokenizer:
        additional_special_tokens = langs
        eos_token, unk_token, bos_token = "<|endoftext|>", "<|endoftext|>", "<|endoftext|>"

        def get_vocab(self):
            return {t: i for i, t in enumerate(names)}

        def convert_tokens_to_ids(self, token):
            return names.index(token)

    class Converter(TransformersConverter):
        def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
            return Tokenizer()

    Converter(str(ckpt)).convert(str(out), quantization=quantization, force=True)
    return ctranslate2.models.Whisper(str(out), device="cpu", compute_type=quantization, intra_threads=threads)


def median(fn, repeats=3):
    """The median wall-clock ms of `repeats` calls, the median process CPU ms, and the output."""
    times, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return float(np.median(times)) * 1000, float(np.median(cpu)) * 1000, out


def main(argv=None):
    import torch
    import transformers
    from transformers.generation.utils import GenerationMixin

    import tensorvm

    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--encoder-only", action="store_true", help="time the encoders only (no generation)")
    ap.add_argument("--repeats", type=int, default=3, help="encoder runs per engine (the median is reported)")
    a = ap.parse_args(argv)
    gen = not a.encoder_only
    torch.set_num_threads(a.threads)
    tmp = Path(tempfile.mkdtemp(prefix="whisper-bench-"))
    ckpt = checkpoint(a.shape, tmp / "ckpt")
    feats = np.random.default_rng(0).standard_normal((1, 80, 3000)).astype(np.float32)
    prompt = np.array([PROMPT], np.int64)
    hf = transformers.WhisperForConditionalGeneration.from_pretrained(ckpt, attn_implementation="eager").eval()
    with torch.no_grad():
        enc_ms, enc_cpu, hf_enc = median(lambda: hf.model.encoder(torch.from_numpy(feats)), a.repeats)
        hf_enc = hf_enc.last_hidden_state.numpy()
        if gen:
            tot_ms, _, want = median(lambda: GenerationMixin.generate(hf, input_features=torch.from_numpy(feats),
                                                                    decoder_input_ids=torch.from_numpy(prompt),
                                                                    max_new_tokens=64, num_beams=1), 2)
    rows = [("transformers f32", enc_ms, enc_cpu, tot_ms if gen else None, 64)]
    for q in (None, "int8", "w8a8"):
        out = tmp / f"w-{q}.tvm"
        tensorvm.import_hf(ckpt, out, quantize=q)
        prog = tensorvm.load(out, num_threads=a.threads)
        enc, cpu, got_enc = median(lambda: prog.run("encode", feats, np.ones((1, 3000), np.int64)), a.repeats)
        if q is None:  # the encoders' outputs agree (f32)
            got_enc = np.asarray(got_enc[0] if isinstance(got_enc, (tuple, list)) else got_enc)
            np.testing.assert_allclose(got_enc, hf_enc, rtol=1e-3, atol=1e-3)
        tot = None
        if gen:
            tot, _, got = median(lambda: prog.generate(feats, decoder_input_ids=prompt, max_new_tokens=64, num_beams=1), 2)
            if q is None and not np.array_equal(got, want.numpy()):
                raise SystemExit("tensorvm f32 and transformers differ")
        rows.append((f"tensorvm {q or 'f32'}", enc, cpu, tot, 64))
    import ctranslate2

    for q in ("float32", "int8"):
        ct2 = ctranslate2_model(ckpt, tmp / f"ct2-{q}", q, a.threads)
        storage = ctranslate2.StorageView.from_array(feats)
        enc, cpu, _ = median(lambda: ct2.encode(storage), a.repeats)
        name, tot, n = f"ctranslate2 {q}", None, 64
        if gen:
            tot, _, res = median(lambda: ct2.generate(storage, [PROMPT], beam_size=1, max_length=len(PROMPT) + 64,
                                                      suppress_blank=False, suppress_tokens=[-1]), 2)
            tokens = res[0].sequences_ids[0]
            ref = want.numpy()[0, len(PROMPT):].tolist()
            agree = next((i for i, (x, y) in enumerate(zip(tokens, ref)) if x != y), min(len(tokens), len(ref)))
            name, n = f"{name} ({len(tokens)} tokens, first {agree} as transformers')", len(tokens)
        rows.append((name, enc, cpu, tot, n))
    print(f"whisper-{a.shape}-shaped, 30 s, greedy 64 tokens, {a.threads} thread(s)")
    print("| engine | encoder ms | encoder CPU ms | encoder CPU / tensorvm f32's | decoder ms/token | total ms |")
    print("|---|---|---|---|---|---|")
    base = rows[1][2]
    for name, enc, cpu, tot, n in rows:
        dec, total = (f"{(tot - enc) / n:.2f}", f"{tot:.0f}") if tot is not None else ("-", "-")
        print(f"| {name} | {enc:.0f} | {cpu:.0f} | {cpu / base:.2f} | {dec} | {total} |")


if __name__ == "__main__":
    main()
