"""Tokenizer files as transformers 5 writes them (its own classes' save_pretrained), from
tokenizers and sentencepiece models trained here on the real multilingual corpus of
tests/fixtures/data/corpus: the files import-hf meets in checkpoints saved today.

In transformers 5 a family's "slow" and "fast" names are one class (GPT2Tokenizer is
GPT2TokenizerFast, LlamaTokenizer is LlamaTokenizerFast...), run by the tokenizers
library; the makers take the class name so that the test bed saves through both names."""
from __future__ import annotations

import json
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "data" / "corpus"


def corpus_lines() -> list[str]:
    """Every line of the corpus, split on "\\n" only (other line breaks stay in a line)."""
    lines = []
    for f in sorted(CORPUS.glob("*.txt")):
        text = f.read_bytes().decode("utf-8")
        lines += text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
    return lines


def _byte_bpe_files(work: Path) -> tuple[Path, Path]:
    """vocab.json and merges.txt (the files GPT2Tokenizer reads) of a byte-level BPE
    trained here on the corpus."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=1200, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus_lines(), trainer)
    work.mkdir(parents=True, exist_ok=True)
    vocab, merges = tok.model.save(str(work))
    return Path(vocab), Path(merges)


def make_gpt2(out_dir: Path, class_name: str = "GPT2Tokenizer", **options) -> Path:
    """tokenizer.json + tokenizer_config.json as transformers 5's GPT2Tokenizer saves them
    (model.continuing_subword_prefix and end_of_word_suffix present and ""), loaded from
    vocab.json / merges.txt as the older checkpoints ship them. `options`: add_prefix_space,
    add_bos_token..."""
    import transformers

    out_dir = Path(out_dir)
    vocab, merges = _byte_bpe_files(out_dir / "_bpe")
    cls = getattr(transformers, class_name)
    cls.from_pretrained(vocab.parent, **options).save_pretrained(out_dir)
    return out_dir


def saved_model_fields(ckpt: Path) -> dict:
    """tokenizer.json's model section without its vocabulary and merges."""
    model = json.loads((Path(ckpt) / "tokenizer.json").read_text(encoding="utf-8"))["model"]
    return {k: v for k, v in model.items() if k not in ("vocab", "merges")}
