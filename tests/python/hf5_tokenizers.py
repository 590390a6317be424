"""Tokenizer files as transformers 5 writes them (its own classes' save_pretrained), from
tokenizers and sentencepiece models trained here on the real multilingual corpus of
tests/fixtures/data/corpus: the files import-hf meets in checkpoints saved today.

In transformers 5 a family's "slow" and "fast" names are one class (GPT2Tokenizer is
GPT2TokenizerFast, LlamaTokenizer is LlamaTokenizerFast...), run by the tokenizers
library; the makers take the class name so that the test bed saves through both names."""
from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "data" / "corpus"


def corpus_lines() -> list[str]:
    """Every line of the corpus, split on "\\n" only (other line breaks stay in a line)."""
    lines = []
    for f in sorted(CORPUS.glob("*.txt")):
        text = f.read_bytes().decode("utf-8")
        lines += text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
    return lines


def _byte_bpe_files(work: Path, specials: tuple = ("<|endoftext|>",)) -> tuple[Path, Path]:
    """vocab.json and merges.txt (the files GPT2Tokenizer reads) of a byte-level BPE
    trained here on the corpus, `specials` first: copies in `work` of the files trained
    once per process."""
    import shutil

    work.mkdir(parents=True, exist_ok=True)
    return tuple(Path(shutil.copy(f, work / f.name)) for f in _trained_byte_bpe(tuple(specials)))


@functools.lru_cache(maxsize=None)
def _cache_dir() -> tempfile.TemporaryDirectory:
    """Where the models trained once per process live (removed at exit)."""
    return tempfile.TemporaryDirectory(prefix="tvm-hf5-")


@functools.lru_cache(maxsize=None)
def _trained_byte_bpe(specials: tuple) -> tuple[Path, Path]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    work = Path(tempfile.mkdtemp(dir=_cache_dir().name))

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=1200, special_tokens=list(specials), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus_lines(), trainer)
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


def train_spm(work: Path, name: str, model_type: str, vocab_size: int, byte_fallback: bool,
              lines: list | None = None, **ids) -> Path:
    """A sentencepiece model trained here on the corpus (or `lines` of it; seeded, one
    thread): work/name.model, a copy of the model trained once per process for these
    arguments. `ids`: unk_id, bos_id, eos_id, pad_id (-1: none), as the family numbers
    them, and other trainer options."""
    import shutil

    work.mkdir(parents=True, exist_ok=True)
    model = _trained_spm(model_type, vocab_size, byte_fallback, tuple(lines or corpus_lines()),
                         tuple(sorted(ids.items())))
    return Path(shutil.copy(model, work / f"{name}.model"))


@functools.lru_cache(maxsize=None)
def _trained_spm(model_type: str, vocab_size: int, byte_fallback: bool, lines: tuple, ids: tuple) -> Path:
    import sentencepiece as spm

    work = Path(tempfile.mkdtemp(dir=_cache_dir().name))
    options = {"seed_sentencepiece_size": 100000, **dict(ids)}
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=str(work / "m"), vocab_size=vocab_size, model_type=model_type,
        byte_fallback=byte_fallback, character_coverage=0.9995, num_threads=1, minloglevel=2, **options)
    return work / "m.model"


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


def make_byte_bpe(out_dir: Path, family: str, class_name: str | None = None, **options) -> Path:
    """A byte-level BPE checkpoint's tokenizer files as transformers 5 saves them, from
    vocab.json / merges.txt trained here: family "qwen2" (Qwen2Tokenizer: NFC, Split on
    Qwen2's regex + ByteLevel), "bart" (BartTokenizer: RobertaProcessing's <s> text </s>),
    "whisper" (WhisperTokenizer, with Whisper's special and timestamp tokens added as the
    hub's files have them) or "llama3" (a Llama 3 style tokenizer.json: Split on Llama 3's
    regex, ignore_merges, <|begin_of_text|> from a template; saved by PreTrainedTokenizerFast,
    as Llama 3's checkpoints name their class)."""
    import shutil

    import transformers

    out_dir = Path(out_dir)
    specials = {"bart": ("<s>", "<pad>", "</s>", "<unk>", "<mask>"),
                "llama3": ("<|begin_of_text|>", "<|end_of_text|>")}.get(family, ("<|endoftext|>",))
    vocab, merges = _byte_bpe_files(out_dir / "_bpe", specials)
    if family == "llama3":
        _llama3_tokenizer(vocab, merges, class_name or "PreTrainedTokenizerFast", **options).save_pretrained(out_dir)
    else:
        default = {"qwen2": "Qwen2Tokenizer", "bart": "BartTokenizer", "whisper": "WhisperTokenizer"}[family]
        tok = getattr(transformers, class_name or default).from_pretrained(vocab.parent, **options)
        if family == "whisper":
            from text_fixtures import whisper_special_tokens

            special, timestamps = whisper_special_tokens()
            tok.add_special_tokens({"additional_special_tokens": special})
            tok.add_tokens(timestamps)
        tok.save_pretrained(out_dir)
    shutil.rmtree(out_dir / "_bpe")
    return out_dir


def _llama3_tokenizer(vocab: Path, merges: Path, class_name: str, **options):
    """Llama 3's tokenizer.json layout over the trained vocabulary."""
    import transformers
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from text_fixtures import LLAMA3_PATTERN

    tok = Tokenizer(models.BPE.from_file(str(vocab), str(merges), ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                                      special_tokens=[("<|begin_of_text|>", bos)])])
    return getattr(transformers, class_name)(tokenizer_object=tok, bos_token="<|begin_of_text|>",
                                             eos_token="<|end_of_text|>", **options)


def _piece_vocab(models: list, first: dict, last: tuple = ()) -> dict:
    """vocab.json as Marian's and fairseq's: `first`, then every piece of the sentencepiece
    models (in their order, each once), then `last`."""
    import sentencepiece as spm

    vocab = dict(first)
    for model in models:
        sp = spm.SentencePieceProcessor(model_file=str(model))
        for i in range(sp.get_piece_size()):
            if not (sp.is_control(i) or sp.is_unknown(i)):
                vocab.setdefault(sp.id_to_piece(i), len(vocab))
    for token in last:
        vocab.setdefault(token, len(vocab))
    return vocab


def _marian_models(work: Path, byte_fallback: bool) -> tuple[Path, Path]:
    """source.spm and target.spm for the Marian makers (unigram, </s> <unk> first as
    Marian's): the source trained on the corpus' even lines, the target on its odd ones."""
    ids = dict(eos_id=0, unk_id=1, bos_id=-1, pad_id=-1, seed_sentencepiece_size=5000)
    lines = corpus_lines()
    return (train_spm(work, "source", "unigram", 1000, byte_fallback, lines=lines[::2], **ids),
            train_spm(work, "target", "unigram", 800, byte_fallback, lines=lines[1::2], **ids))


def make_marian(out_dir: Path, separate_vocabs: bool = False, byte_fallback: bool = False, **options) -> Path:
    """A Marian checkpoint's tokenizer files as transformers 5's MarianTokenizer (its one,
    sentencepiece-run class) saves them: source.spm and target.spm (unigram models trained
    here), vocab.json (</s> <unk>, the pieces, <pad>), and with separate_vocabs
    target_vocab.json."""
    import shutil

    import transformers

    out_dir = Path(out_dir)
    work = out_dir / "_vocab"
    work.mkdir(parents=True, exist_ok=True)
    src, tgt = _marian_models(work, byte_fallback)
    first = {"</s>": 0, "<unk>": 1}

    def write(name: str, models: list):
        (work / name).write_text(json.dumps(_piece_vocab(models, first, ("<pad>",)), ensure_ascii=False),
                                 encoding="utf-8")

    extra = {}
    if separate_vocabs:
        write("vocab.json", [src])
        write("target_vocab.json", [tgt])
        extra = {"separate_vocabs": True, "target_vocab_file": str(work / "target_vocab.json")}
    else:
        write("vocab.json", [src, tgt])
    transformers.MarianTokenizer(str(src), str(tgt), str(work / "vocab.json"), source_lang="de", target_lang="en",
                                 **extra, **options).save_pretrained(out_dir)
    shutil.rmtree(work)
    return out_dir


def make_m2m100(out_dir: Path, byte_fallback: bool = False, **options) -> Path:
    """An M2M100 checkpoint's tokenizer files as transformers 5's M2M100Tokenizer (its one,
    sentencepiece-run class) saves them: sentencepiece.bpe.model (a BPE model trained
    here), vocab.json in fairseq's layout (<s> <pad> </s> <unk>, then the pieces), the
    config with src_lang and tgt_lang."""
    import shutil

    import transformers

    out_dir = Path(out_dir)
    work = out_dir / "_spm"
    model = train_spm(work, "spm", "bpe", 2000, byte_fallback, bos_id=0, pad_id=1, eos_id=2, unk_id=3)
    vocab = _piece_vocab([model], {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3})
    (work / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    options = {"src_lang": "de", "tgt_lang": "en", **options}
    transformers.M2M100Tokenizer(str(work / "vocab.json"), str(model), **options).save_pretrained(out_dir)
    shutil.rmtree(work)
    return out_dir


def blank_optional_fields(ckpt: Path) -> None:
    """Rewrites the saved files with their optional fields present but empty, as other
    writers leave them: tokenizer.json's model.dropout null, continuing_subword_prefix and
    end_of_word_suffix "", truncation and padding null, an empty normalizer null (kept
    when there is one); tokenizer_config.json's added_tokens_decoder {} when tokenizer.json
    lists the added tokens, chat_template null."""
    path = Path(ckpt) / "tokenizer.json"
    tj = json.loads(path.read_text(encoding="utf-8"))
    tj["model"].update({"dropout": None, "continuing_subword_prefix": "", "end_of_word_suffix": ""})
    tj.update({"truncation": None, "padding": None, "normalizer": tj.get("normalizer")})
    path.write_text(json.dumps(tj, ensure_ascii=False), encoding="utf-8")
    config_path = Path(ckpt) / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config.update({"added_tokens_decoder": {}, "chat_template": None})
    config_path.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
