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


def train_spm(work: Path, name: str, model_type: str, vocab_size: int, byte_fallback: bool, **ids) -> Path:
    """A sentencepiece model trained here on the corpus (seeded, one thread): work/name.model.
    `ids`: unk_id, bos_id, eos_id, pad_id (-1: none), as the family numbers them."""
    import sentencepiece as spm

    work.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus_lines()), model_prefix=str(work / name), vocab_size=vocab_size,
        model_type=model_type, byte_fallback=byte_fallback, character_coverage=0.9995, num_threads=1,
        seed_sentencepiece_size=100000, minloglevel=2, **ids)
    return work / f"{name}.model"


def make_llama2(out_dir: Path, class_name: str = "LlamaTokenizer", byte_fallback: bool = True, **options) -> Path:
    """tokenizer.json + tokenizer_config.json as transformers 5's LlamaTokenizer saves them
    from a Llama 2 style tokenizer.model (a BPE sentencepiece model, <unk> <s> </s> first,
    with or without byte pieces): no normalizer, a Metaspace pre-tokenizer (prepend_scheme
    "first"; "always" with legacy=True, "never" with add_prefix_space=False). `options`:
    legacy, add_prefix_space, add_bos_token..."""
    import shutil

    import transformers

    out_dir = Path(out_dir)
    model = train_spm(out_dir / "_spm", "tokenizer", "bpe", 2000, byte_fallback, unk_id=0, bos_id=1, eos_id=2,
                      pad_id=-1)
    getattr(transformers, class_name).from_pretrained(model.parent, **options).save_pretrained(out_dir)
    shutil.rmtree(out_dir / "_spm")  # as a checkpoint saved by transformers 5: no tokenizer.model
    return out_dir


def make_gemma(out_dir: Path, class_name: str = "GemmaTokenizer", **options) -> Path:
    """tokenizer.json + tokenizer_config.json as transformers 5's GemmaTokenizer saves them
    from a Gemma style tokenizer.model (a BPE sentencepiece model with byte pieces,
    <pad> <eos> <bos> <unk> first): normalizer Replace(" ", "▁"), pre-tokenizer
    Split(" ", MergedWithPrevious), which cuts nothing after that normalizer."""
    import shutil

    import transformers

    out_dir = Path(out_dir)
    model = train_spm(out_dir / "_spm", "tokenizer", "bpe", 2000, True, pad_id=0, eos_id=1, bos_id=2, unk_id=3,
                      pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>", unk_piece="<unk>")
    getattr(transformers, class_name).from_pretrained(model.parent, **options).save_pretrained(out_dir)
    shutil.rmtree(out_dir / "_spm")
    return out_dir


def make_nllb(out_dir: Path, byte_fallback: bool, class_name: str = "NllbTokenizer", tokenizer_json: bool = True,
              **options) -> Path:
    """An NLLB checkpoint's tokenizer files: sentencepiece.bpe.model (a BPE sentencepiece
    model as NLLB's, <unk> <s> </s> first, with or without byte pieces) and the
    tokenizer.json / tokenizer_config.json transformers 5's NllbTokenizer saves from it
    (byte_fallback false there: a character outside the vocabulary is <unk>). Without
    `tokenizer_json`, as fairseq-era checkpoints: the config and the spm model only."""
    import shutil

    import transformers
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    out_dir = Path(out_dir)
    model = train_spm(out_dir / "_spm", "sentencepiece.bpe", "bpe", 2000, byte_fallback, unk_id=0, bos_id=1, eos_id=2,
                      pad_id=-1)
    options = {"src_lang": "fra_Latn", "tgt_lang": "eng_Latn",
               "additional_special_tokens": list(FAIRSEQ_LANGUAGE_CODES), **options}
    getattr(transformers, class_name).from_pretrained(model.parent, **options).save_pretrained(out_dir)
    shutil.copy(model, out_dir / model.name)
    shutil.rmtree(out_dir / "_spm")
    if not tokenizer_json:  # the config lists the added tokens' ids, as the hub's NLLB configs do
        added = json.loads((out_dir / "tokenizer.json").read_text(encoding="utf-8"))["added_tokens"]
        config = json.loads((out_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
        config["added_tokens_decoder"] = {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in added}
        (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
        (out_dir / "tokenizer.json").unlink()
    return out_dir


def make_t5(out_dir: Path, class_name: str = "T5Tokenizer", byte_fallback: bool = False, t5_ids: bool = True,
            **options) -> Path:
    """A T5 checkpoint's tokenizer files: spiece.model (a unigram sentencepiece model,
    <pad> </s> <unk> first as T5's, or sentencepiece's default <unk> <s> </s> when not
    `t5_ids`) and the tokenizer.json / tokenizer_config.json transformers 5's T5Tokenizer
    saves from it (Precompiled normalizer, WhitespaceSplit + Metaspace, unk_id)."""
    import shutil

    import transformers

    out_dir = Path(out_dir)
    ids = dict(pad_id=0, eos_id=1, unk_id=2, bos_id=-1) if t5_ids else dict(unk_id=0, bos_id=1, eos_id=2, pad_id=3)
    model = train_spm(out_dir / "_spm", "spiece", "unigram", 2000, byte_fallback, **ids)
    getattr(transformers, class_name).from_pretrained(model.parent, **options).save_pretrained(out_dir)
    shutil.copy(model, out_dir / model.name)
    shutil.rmtree(out_dir / "_spm")
    return out_dir
