"""Tokenization throughput: the C++ text library (program.tokenizer) against
transformers' tokenizers, on the locally trained tokenizers of the text tests.

    PYTHONPATH=build/dev/pkg python3 -m bench.text_bench [--lines 5000] [--kinds nllb-spm,whisper-bpe,t5-spm]

Each side encodes (then decodes) the same lines one call per line, on one thread;
the ids are checked equal first, so the work is the same."""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
import text_fixtures as tf  # noqa: E402


def _rate(fn, lines, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for s in lines:
            fn(s)
        best = min(best, time.perf_counter() - t0)
    return len(lines) / best


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--kinds", default="", help="comma-separated kinds to measure (default: all)")
    args = ap.parse_args(argv)
    import os

    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import tensorvm
    from transformers import (M2M100Tokenizer, MarianTokenizer, NllbTokenizer, PreTrainedTokenizerFast, T5Tokenizer,
                              WhisperTokenizer)

    wanted = set(filter(None, args.kinds.split(",")))

    lines = tf.tricky_lines(args.lines, seed=11)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)

        def load_ours(ckpt, model_type):
            return tensorvm.load(tf.tokenizer_only_program(ckpt, tmp / f"{ckpt.name}.tvm", model_type)).tokenizer

        ckpt = tf.make_marian_tokenizer(tmp / "marian")
        rows.append(("marian-spm", "MarianTokenizer", load_ours(ckpt, "marian"),
                     MarianTokenizer.from_pretrained(ckpt)))
        ckpt = tf.make_m2m100_tokenizer(tmp / "m2m100")
        rows.append(("m2m100-spm", "M2M100Tokenizer", load_ours(ckpt, "m2m_100"),
                     M2M100Tokenizer.from_pretrained(ckpt)))
        for style, model_type in (("gpt2", "gpt2"), ("llama3", "llama"), ("qwen2", "qwen2")):
            ckpt = tf.make_byte_bpe_tokenizer(tmp / style, style)
            rows.append((f"byte-level-bpe ({style} style)", "PreTrainedTokenizerFast", load_ours(ckpt, model_type),
                         PreTrainedTokenizerFast.from_pretrained(ckpt)))
        ckpt = tf.make_sentencepiece_bpe_tokenizer(tmp / "llama2")
        rows.append(("sentencepiece (Llama 2 style)", "PreTrainedTokenizerFast", load_ours(ckpt, "llama"),
                     PreTrainedTokenizerFast.from_pretrained(ckpt)))
        ckpt = tf.make_nllb_tokenizer(tmp / "nllb")
        rows.append(("nllb-spm", "NllbTokenizer", load_ours(ckpt, "m2m_100"), NllbTokenizer.from_pretrained(ckpt)))
        ckpt = tf.make_whisper_tokenizer(tmp / "whisper", language="fr", task="transcribe")
        rows.append(("whisper-bpe", "WhisperTokenizer", load_ours(ckpt, "whisper"),
                     WhisperTokenizer.from_pretrained(ckpt)))
        ckpt = tf.make_t5_tokenizer(tmp / "t5")
        rows.append(("t5-spm", "T5Tokenizer", load_ours(ckpt, "t5"), T5Tokenizer.from_pretrained(ckpt)))
        if wanted:
            rows = [r for r in rows if r[0].split(" ")[0] in wanted]
        print(f"{len(lines)} lines, one call per line, one thread; lines/s (best of 3)")
        print("| kind | ours encode | theirs encode | ratio | ours decode | theirs decode | ratio | theirs |")
        print("|---|---|---|---|---|---|---|---|")
        for kind, name, ours, hf in rows:
            ids = [hf(s)["input_ids"] for s in lines]
            mismatches = sum(ours.encode(s) != i for s, i in zip(lines, ids))
            e_ours, e_hf = _rate(ours.encode, lines), _rate(lambda s: hf(s)["input_ids"], lines)
            d_ours = _rate(lambda i: ours.decode(i, True), ids)
            d_hf = _rate(lambda i: hf.decode(i, skip_special_tokens=True), ids)
            print(f"| {kind} | {e_ours:,.0f} | {e_hf:,.0f} | {e_ours / e_hf:.2f}x | {d_ours:,.0f} | {d_hf:,.0f} | "
                  f"{d_ours / d_hf:.2f}x | {name}"
                  f"{f' ({mismatches} lines differ)' if mismatches else ''} |")


if __name__ == "__main__":
    main()
