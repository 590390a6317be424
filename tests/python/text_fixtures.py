"""Tokenizers built locally for the text tests (no model hub): sentencepiece models and a
byte-level BPE trained in a few seconds on a seeded synthetic corpus, saved the way
transformers saves them, and the varied lines the parity tests encode."""
from __future__ import annotations

import json
import random
from pathlib import Path

from pyc_helpers import run_cli  # noqa: F401 (the text tests call tf.run_cli)

_NUMBERS_EN = "zero one two three four five six seven eight nine ten eleven twelve twenty thirty hundred".split()
_NUMBERS_FR = "zéro un deux trois quatre cinq six sept huit neuf dix onze douze vingt trente cent".split()
_WORDS_EN = ("the cat sat on a mat and the dog ran to its house with many friends who were very happy today "
             "while it rained outside the small village near old river bridge").split()
_WORDS_FR = ("le chat était assis sur un tapis et le chien a couru vers sa maison avec beaucoup d'amis qui "
             "étaient très heureux aujourd'hui pendant qu'il pleuvait dehors près du vieux pont où l'été çà").split()
_PUNCT = [",", ".", "!", "?", ";", ":", "...", "«", "»", "“", "”", "‘", "’", "(", ")", "-", "–", "—", "…", "\""]
_ODD = ["東京", "日本語", "中文", "🙂", "👍🏽", "🇫🇷", "café", "naïve", "Ångström", "ß", "Ωμέγα", "Привет", "שלום",
        "مرحبا", "\u00a0", "\u200b", "ﬁ", "①", "Ⅻ", "ｆｕｌｌ", "e\u0301", "2024", "3.14", "1,000,000", "007",
        "123456789", "\t", "  ", "   ", "\n"]


def corpus(lang: str, n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    words = (_WORDS_EN + _NUMBERS_EN) if lang == "en" else (_WORDS_FR + _NUMBERS_FR)
    lines = []
    for _ in range(n):
        k = rnd.randint(3, 14)
        toks = [rnd.choice(words) for _ in range(k)]
        if rnd.random() < 0.3:
            toks.insert(rnd.randrange(len(toks) + 1), str(rnd.randint(0, 9999)))
        line = " ".join(toks)
        line = line[0].upper() + line[1:] + rnd.choice([".", "!", "?", " ...", ","])
        lines.append(line)
    return lines


def tricky_lines(n: int, seed: int, specials: tuple = ()) -> list[str]:
    """Varied lines: accents, CJK, emoji, runs of spaces and tabs, curly quotes,
    guillemets, ellipses, digits, language codes, special tokens in the text."""
    rnd = random.Random(seed)
    pool = _WORDS_EN + _WORDS_FR + _NUMBERS_EN + _NUMBERS_FR + _PUNCT + _ODD + list(specials)
    fixed = ["", " ", "  ", "\t", "a", "A", ".", "...", "Hello world", " leading", "trailing ", "  both  ",
             "tab\there", "multi   space", "«Bonjour»", "“quoted”", "l’été", "1 2 3", "12345 67890",
             "東京は晴れ", "🙂🙂🙂", "emoji 👍🏽 and flag 🇫🇷", "Ｆｕｌｌｗｉｄｔｈ", "e\u0301t\u00e9", "zero\u200bwidth",
             ">>fr<< Le chat", ">>de<<", ">>xx<< unknown code", ">>fr<<>>de<<", "noend >>fr", "<<reversed>>",
             "ﬁne ①②", "non\u00a0breaking", "A\u030angstro\u0308m", "\u1100\u1161\u11a8", "\u212b \u2126",
             "line\u2028sep", "x" * 200]
    fixed += [s for sp in specials for s in (sp, f"a {sp} b", f"{sp}{sp}", f"x{sp}y")]
    lines = list(fixed)
    while len(lines) < n:
        k = rnd.randint(1, 16)
        parts = []
        for _ in range(k):
            parts.append(rnd.choice(pool))
            parts.append(rnd.choice([" ", " ", " ", "", "  ", "\t", " \t "]))
        line = "".join(parts)
        if rnd.random() < 0.1:
            line = rnd.choice([">>fr<<", ">>de<<", ">>fr<< "]) + line
        lines.append(line)
    return lines[:n]


def long_unknown_lines() -> list[str]:
    """Lines with runs of thousands of characters the trained models do not know (Cyrillic):
    sentencepiece makes each run one unknown piece, which its Encode used to build in
    quadratic time (text/spm_linear.cpp)."""
    run = "жщю" * 3000
    return [run, f"Hello {run} world {run[:5000]}!", "the cat sat " * 2000 + run, f"{run}  {run} 12 {run}."]


def _train_spm(lines: list[str], prefix: Path, vocab_size: int, model_type: str = "unigram") -> Path:
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=str(prefix), vocab_size=vocab_size, model_type=model_type,
        character_coverage=0.995, num_threads=1, seed_sentencepiece_size=10000, minloglevel=2,
        bos_id=-1, eos_id=0, unk_id=1, pad_id=-1, eos_piece="</s>", unk_piece="<unk>")
    return prefix.with_suffix(".model")


def make_marian_tokenizer(out_dir: Path, seed: int = 0, separate_vocabs: bool = False) -> Path:
    """A checkpoint-style directory holding a MarianTokenizer (source.spm, target.spm,
    vocab.json, tokenizer_config.json...) from sentencepiece models trained here.
    vocab.json is ordered as Marian's (</s>, <unk>, language codes, pieces, <pad>), so
    its ids are not the spm ids, and it leaves out a few pieces, which then encode as <unk>.
    With separate_vocabs, vocab.json has the source pieces and target_vocab.json the target's."""
    from transformers import MarianTokenizer

    out_dir = Path(out_dir)
    work = out_dir / "_spm"
    work.mkdir(parents=True, exist_ok=True)
    src = _train_spm(corpus("en", 600, seed) + ["Σ ß ü 東 🙂"], work / "source", 180)
    tgt = _train_spm(corpus("fr", 600, seed + 1), work / "target", 200)
    import sentencepiece as spm

    rnd = random.Random(seed)

    def vocab_of(models) -> dict:
        vocab = {"</s>": 0, "<unk>": 1, ">>fr<<": 2, ">>de<<": 3}
        for model in models:
            sp = spm.SentencePieceProcessor(model_file=str(model))
            for i in range(sp.get_piece_size()):
                piece = sp.id_to_piece(i)
                if sp.is_control(i) or sp.is_unknown(i) or piece in vocab:
                    continue
                if rnd.random() < 0.03:  # left out on purpose: encodes as <unk>
                    continue
                vocab[piece] = len(vocab)
        vocab["<pad>"] = len(vocab)
        return vocab

    extra = {}
    if separate_vocabs:
        (work / "vocab.json").write_text(json.dumps(vocab_of([src]), ensure_ascii=False), encoding="utf-8")
        (work / "target_vocab.json").write_text(json.dumps(vocab_of([tgt]), ensure_ascii=False), encoding="utf-8")
        extra = {"separate_vocabs": True, "target_vocab_file": str(work / "target_vocab.json")}
    else:
        (work / "vocab.json").write_text(json.dumps(vocab_of([src, tgt]), ensure_ascii=False), encoding="utf-8")
    tok = MarianTokenizer(str(src), str(tgt), str(work / "vocab.json"), source_lang="en", target_lang="fr", **extra)
    tok.save_pretrained(out_dir)
    return out_dir


def tokenizer_only_program(checkpoint_dir: Path, out: Path, model_type: str) -> Path:
    """A program directory holding only a tokenizer (and a one-line program), written as
    import-hf writes one: enough for the text library, quick to make."""
    from tensorvm.pycompiler.program_dir import write_program_dir
    from tensorvm.pycompiler.tokenizer_attach import tokenizer_files
    from tensorvm.pycompiler.tokenizer_template import with_template

    files, entry = tokenizer_files(checkpoint_dir, model_type)
    assert entry is not None, f"{checkpoint_dir} has no {model_type} tokenizer files"
    entry = with_template(checkpoint_dir, entry)
    text = "# tensorvm ir 1\ndef identity(x: int) -> int:\n    return x\n"
    return write_program_dir(out, text, {}, {"model_type": model_type, "tokenizer": entry}, extra_files=files)


def tiny_marian_checkpoint(tokenizer_dir: Path, out: Path, seed: int = 0) -> Path:
    """A seeded random MarianMTModel whose vocabulary is the tokenizer's, saved with it."""
    import shutil

    import torch
    from transformers import MarianConfig, MarianMTModel

    vocab = json.loads((Path(tokenizer_dir) / "vocab.json").read_text(encoding="utf-8"))
    v = len(vocab)
    config = MarianConfig(vocab_size=v, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                          decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                          max_position_embeddings=64, pad_token_id=vocab["<pad>"], eos_token_id=vocab["</s>"],
                          decoder_start_token_id=vocab["<pad>"], forced_eos_token_id=vocab["</s>"], max_length=12,
                          num_beams=1, bad_words_ids=[[vocab["<pad>"]]])
    torch.manual_seed(seed)
    model = MarianMTModel(config).eval()
    model.save_pretrained(out)
    for f in Path(tokenizer_dir).iterdir():
        if f.is_file():
            shutil.copy(f, Path(out) / f.name)
    return Path(out)


LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                 r"\s*[\r\n]+|\s+(?!\S)|\s+")
BPE_SPECIALS = ("<|endoftext|>", "<|begin_of_text|>", "<|im_start|>", "<|im_end|>")
BART_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")


def make_byte_bpe_tokenizer(out_dir: Path, style: str, seed: int = 0) -> Path:
    """A checkpoint-style directory with tokenizer.json (+ tokenizer_config.json) of a
    byte-level BPE trained here. style: "gpt2" (ByteLevel with GPT-2's regex), "llama3"
    (Split on Llama 3's regex, ignore_merges, <|begin_of_text|> prepended by a
    template), "qwen2" (Split on Qwen2's regex, NFC normalizer) or "bart" (GPT-2's, with
    <s> <pad> </s> <unk> as ids 0-3 and RobertaProcessing's <s> text </s>)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    from tokenizers import normalizers

    tok = Tokenizer(models.BPE(ignore_merges=style == "llama3"))
    if style == "qwen2":
        tok.normalizer = normalizers.NFC()
    if style in ("gpt2", "bart"):
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        pattern = LLAMA3_PATTERN if style == "llama3" else QWEN2_PATTERN
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    specials = BART_SPECIALS if style == "bart" else BPE_SPECIALS
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=list(specials), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    text = corpus("en", 800, seed) + corpus("fr", 800, seed + 1) + tricky_lines(300, seed + 2)
    tok.train_from_iterator(text, trainer)
    if style == "llama3":
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A $B:1",
                                          special_tokens=[("<|begin_of_text|>", bos)])])
    elif style == "bart":
        tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_tokens(["<added>", "ünï"])  # non-special added tokens
    if style == "bart":
        fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                       unk_token="<unk>")
        fast.save_pretrained(out_dir)
        return Path(out_dir)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|begin_of_text|>",
                                   pad_token="<|endoftext|>")
    out_dir = Path(out_dir)
    fast.save_pretrained(out_dir)
    return out_dir


def tiny_gpt2_checkpoint(tokenizer_dir: Path, out: Path, seed: int = 0) -> Path:
    """A seeded random GPT2LMHeadModel whose vocabulary is the byte-level BPE's, saved with it."""
    import shutil

    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tj = json.loads((Path(tokenizer_dir) / "tokenizer.json").read_text(encoding="utf-8"))
    v = max(tj["model"]["vocab"].values()) + 1 + len(tj["added_tokens"])
    eos = next(t["id"] for t in tj["added_tokens"] if t["content"] == "<|endoftext|>")
    config = GPT2Config(vocab_size=v, n_positions=64, n_embd=32, n_layer=1, n_head=2, bos_token_id=eos,
                        eos_token_id=eos, pad_token_id=eos)
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config).eval()
    model.generation_config.max_length = 24
    model.save_pretrained(out)
    for f in Path(tokenizer_dir).iterdir():
        if f.is_file():
            shutil.copy(f, Path(out) / f.name)
    return Path(out)


def make_sentencepiece_bpe_tokenizer(out_dir: Path, seed: int = 0, gemma: bool = False) -> Path:
    """A checkpoint-style directory with a Llama 2 style tokenizer.json: BPE over
    characters with "▁" for spaces (normalizer Prepend + Replace), <0x00>..<0xFF> byte
    tokens after <unk> <s> </s> for characters outside the vocabulary, <s> prepended.
    gemma: as Gemma's, no "▁" prepended (normalizer Replace only, no Strip decoding)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    norm = normalizers.Sequence([*([] if gemma else [normalizers.Prepend("▁")]), normalizers.Replace(" ", "▁")])
    trained = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    trained.normalizer = norm
    trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False)
    trained.train_from_iterator(corpus("en", 600, seed) + corpus("fr", 600, seed + 1), trainer)
    model = json.loads(trained.to_str())["model"]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab.update({f"<0x{b:02X}>": 3 + b for b in range(256)})
    for piece, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1]):
        vocab.setdefault(piece, len(vocab))
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = norm
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     *([] if gemma else [decoders.Strip(content=" ", left=1, right=0)])])
    tok.add_special_tokens([AddedToken(t, normalized=False) for t in ("<unk>", "<s>", "</s>")])
    tok.add_tokens(["<added>", "ünï"])  # non-special, normalized: found after "▁" replaces spaces
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="</s>")
    out_dir = Path(out_dir)
    fast.save_pretrained(out_dir)
    return out_dir


def tiny_llama_checkpoint(tokenizer_dir: Path, out: Path, seed: int = 0, family: str = "Llama") -> Path:
    """A seeded random {family}ForCausalLM (Llama, Mistral, Gemma, Phi3) whose vocabulary
    is the tokenizer's, saved with it."""
    import shutil

    import torch
    import transformers

    tj = json.loads((Path(tokenizer_dir) / "tokenizer.json").read_text(encoding="utf-8"))
    v = max(tj["model"]["vocab"].values()) + 1
    config = getattr(transformers, family + "Config")(
        vocab_size=v, hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2, pad_token_id=0,
        **({"head_dim": 8} if family == "Gemma" else {}))
    torch.manual_seed(seed)
    model = getattr(transformers, family + "ForCausalLM")(config).eval()
    with torch.no_grad():  # larger weights than the default init: logits far apart, no near-ties
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 1.0 / p.shape[1] ** 0.5)
    model.generation_config.max_length = 24
    model.save_pretrained(out)
    for f in Path(tokenizer_dir).iterdir():
        if f.is_file():
            shutil.copy(f, Path(out) / f.name)
    return Path(out)


def make_m2m100_tokenizer(out_dir: Path, seed: int = 0, src_lang: str = "fr", clean_up: bool = False) -> Path:
    """A checkpoint-style directory holding an M2M100Tokenizer: a BPE sentencepiece model
    trained here, vocab.json in fairseq's layout (<s> <pad> </s> <unk> first, so its ids
    are not the spm ids) leaving out a few pieces; language tokens come after it."""
    import sentencepiece as spm
    from transformers import M2M100Tokenizer

    out_dir = Path(out_dir)
    work = out_dir / "_spm"
    work.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus("en", 500, seed) + corpus("fr", 500, seed + 1)), model_prefix=str(work / "spm"),
        vocab_size=300, model_type="bpe", character_coverage=0.995, num_threads=1, minloglevel=2,
        bos_id=0, pad_id=1, eos_id=2, unk_id=3)
    sp = spm.SentencePieceProcessor(model_file=str(work / "spm.model"))
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    rnd = random.Random(seed)
    for i in range(sp.get_piece_size()):
        if not (sp.is_control(i) or sp.is_unknown(i)) and rnd.random() >= 0.03:
            vocab.setdefault(sp.id_to_piece(i), len(vocab))
    (work / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    tok = M2M100Tokenizer(str(work / "vocab.json"), str(work / "spm.model"), src_lang=src_lang, tgt_lang="en",
                          clean_up_tokenization_spaces=clean_up)
    tok.save_pretrained(out_dir)
    return out_dir


def tiny_m2m100_checkpoint(tokenizer_dir: Path, out: Path, seed: int = 0) -> Path:
    """A seeded random M2M100ForConditionalGeneration (M2M100's or NLLB's) covering the
    tokenizer's vocabulary and language tokens, saved with it (weights spread as tests/fixtures/random_checkpoints.py
    spreads them, so that logits are far apart)."""
    import shutil
    import sys as _sys

    import torch
    from transformers import AutoTokenizer, GenerationConfig, M2M100Config, M2M100ForConditionalGeneration

    _sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
    from random_checkpoints import _randomize

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)  # M2M100Tokenizer or NllbTokenizer
    v = len(tok.encoder) + len(tok.lang_token_to_id) + tok.num_madeup_words if hasattr(tok, "lang_token_to_id") else len(tok)
    config = M2M100Config(vocab_size=v, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                          decoder_attention_heads=2, encoder_ffn_dim=48, decoder_ffn_dim=48,
                          max_position_embeddings=64, pad_token_id=1, eos_token_id=2, bos_token_id=0,
                          decoder_start_token_id=2)
    torch.manual_seed(seed)
    model = M2M100ForConditionalGeneration(config).eval()
    _randomize(model, seed)
    model.generation_config = GenerationConfig(decoder_start_token_id=2, eos_token_id=2, pad_token_id=1,
                                               bos_token_id=0, max_length=16)
    model.save_pretrained(out)
    for f in Path(tokenizer_dir).iterdir():
        if f.is_file():
            shutil.copy(f, Path(out) / f.name)
    return Path(out)


def make_nllb_tokenizer(out_dir: Path, seed: int = 0, src_lang: str = "fra_Latn", legacy: bool = False,
                        clean_up: bool = False) -> Path:
    """A checkpoint-style directory holding an NllbTokenizer as the hub's NLLB checkpoints
    do: sentencepiece.bpe.model (a BPE sentencepiece model trained here, <unk> <s> </s>
    first as NLLB's), and tokenizer.json / tokenizer_config.json saved by transformers
    (fairseq's id order, the language codes and <mask> as added tokens). clean_up:
    clean_up_tokenization_spaces, as many NLLB checkpoints set it."""
    import shutil

    from transformers import NllbTokenizer
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    out_dir = Path(out_dir)
    work = _train_nllb_spm(out_dir / "_spm", seed)
    tok = NllbTokenizer.from_pretrained(work, src_lang=src_lang, tgt_lang="eng_Latn",
                                        additional_special_tokens=list(FAIRSEQ_LANGUAGE_CODES), legacy_behaviour=legacy,
                                        clean_up_tokenization_spaces=clean_up)
    tok.save_pretrained(out_dir)
    shutil.copy(work / "sentencepiece.bpe.model", out_dir / "sentencepiece.bpe.model")
    return out_dir


def _train_nllb_spm(work: Path, seed: int) -> Path:
    """A BPE sentencepiece model as NLLB's (<unk> <s> </s> first): work/sentencepiece.bpe.model."""
    import sentencepiece as spm

    work.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus("en", 500, seed) + corpus("fr", 500, seed + 1)),
        model_prefix=str(work / "sentencepiece.bpe"), vocab_size=300, model_type="bpe", character_coverage=0.995,
        num_threads=1, minloglevel=2, unk_id=0, bos_id=1, eos_id=2, pad_id=-1)
    return work


def make_nllb_spm_only(out_dir: Path, seed: int = 0, src_lang: str = "fra_Latn", legacy: bool = False,
                       listed_ids: bool = False) -> Path:
    """A checkpoint-style directory as fairseq-era NLLB checkpoints ship their tokenizer (the
    slow NllbTokenizer's files): sentencepiece.bpe.model and tokenizer_config.json, no
    tokenizer.json. listed_ids: the config lists the added tokens' ids (added_tokens_decoder,
    as the hub's NLLB configs do), in fairseq's order: the language codes from the spm size
    + 1 (facebook/nllb-200's eng_Latn is 256047: 256000 pieces + 1 + its index 46), <mask> last."""
    import shutil

    import sentencepiece as spm
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    out_dir = Path(out_dir)
    work = _train_nllb_spm(out_dir / "_spm", seed)
    shutil.copy(work / "sentencepiece.bpe.model", out_dir / "sentencepiece.bpe.model")
    codes = list(FAIRSEQ_LANGUAGE_CODES)
    mask = {"content": "<mask>", "lstrip": True, "normalized": True, "rstrip": False, "single_word": False,
            "special": True}
    config = {"tokenizer_class": "NllbTokenizer", "src_lang": src_lang, "tgt_lang": "eng_Latn",
              "legacy_behaviour": legacy, "additional_special_tokens": codes, "bos_token": "<s>", "eos_token": "</s>",
              "unk_token": "<unk>", "pad_token": "<pad>", "sep_token": "</s>", "cls_token": "<s>",
              "mask_token": dict(mask, __type="AddedToken"), "model_max_length": 1024, "sp_model_kwargs": {}}
    if listed_ids:
        def special(content):
            return {"content": content, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                    "special": True}
        n = spm.SentencePieceProcessor(model_file=str(work / "sentencepiece.bpe.model")).get_piece_size()
        listed = {str(i): special(t) for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>"])}
        listed.update({str(n + 1 + i): special(c) for i, c in enumerate(codes)})
        listed[str(n + 1 + len(codes))] = mask
        config["added_tokens_decoder"] = listed
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return out_dir


def whisper_special_tokens() -> tuple[list, list]:
    """Whisper's added tokens after <|endoftext|>, in its id order: (special ones:
    <|startoftranscript|>, the language tokens, task and other markers; timestamps
    <|0.00|> ... <|30.00|>, which are not special)."""
    from transformers.models.whisper.tokenization_whisper import LANGUAGES

    specials = ["<|startoftranscript|>"] + [f"<|{code}|>" for code in LANGUAGES]
    specials += ["<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
                 "<|notimestamps|>"]
    return specials, [f"<|{i * 0.02:.2f}|>" for i in range(1501)]


def make_whisper_tokenizer(out_dir: Path, seed: int = 0, **options) -> Path:
    """A checkpoint-style directory with a WhisperTokenizer(Fast)'s tokenizer.json and
    tokenizer_config.json: a byte-level BPE trained here (GPT-2's pre-tokenizer) ending in
    <|endoftext|>, then Whisper's special and timestamp tokens in Whisper's order.
    `options`: language, task, predict_timestamps, as WhisperTokenizer takes them."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import WhisperTokenizer

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus("en", 800, seed) + corpus("fr", 800, seed + 1) + tricky_lines(300, seed + 2), trainer)
    specials, timestamps = whisper_special_tokens()
    tok.add_special_tokens([AddedToken("<|endoftext|>", normalized=False)])
    tok.add_special_tokens([AddedToken(t, normalized=False) for t in specials])
    tok.add_tokens([AddedToken(t, normalized=False) for t in timestamps])
    hf = WhisperTokenizer(tokenizer_object=tok, **options)
    out_dir = Path(out_dir)
    hf.save_pretrained(out_dir)
    return out_dir


def tiny_whisper_checkpoint(tokenizer_dir: Path, out: Path, seed: int = 0, prompt_config: bool = False,
                            multilingual: bool = True) -> Path:
    """A seeded random WhisperForConditionalGeneration (128 frames) whose vocabulary is the
    Whisper tokenizer's, saved with it (weights spread as random_checkpoints spreads them).
    prompt_config: the generation config has what generate(language=, task=) reads, as the
    released checkpoints' do (lang_to_id, task_to_id, no_timestamps_token_id, is_multilingual)."""
    import shutil
    import sys as _sys

    import torch
    from transformers import GenerationConfig, WhisperConfig, WhisperForConditionalGeneration, WhisperTokenizer

    _sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
    from random_checkpoints import _randomize

    tok = WhisperTokenizer.from_pretrained(tokenizer_dir)
    sot, eot = tok.convert_tokens_to_ids(["<|startoftranscript|>", "<|endoftext|>"])
    config = WhisperConfig(vocab_size=len(tok), d_model=32, encoder_layers=1, decoder_layers=1,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=48,
                           decoder_ffn_dim=48, num_mel_bins=80, max_source_positions=64, max_target_positions=40,
                           decoder_start_token_id=sot, eos_token_id=eot, pad_token_id=eot, bos_token_id=eot)
    torch.manual_seed(seed)
    model = WhisperForConditionalGeneration(config).eval()
    _randomize(model, seed)
    model.generation_config = GenerationConfig(decoder_start_token_id=sot, eos_token_id=eot, pad_token_id=eot,
                                               bos_token_id=eot, max_length=16)
    if prompt_config:
        from transformers.models.whisper.tokenization_whisper import LANGUAGES

        g = model.generation_config
        g.lang_to_id = {f"<|{c}|>": tok.convert_tokens_to_ids(f"<|{c}|>") for c in LANGUAGES}
        g.task_to_id = {t: tok.convert_tokens_to_ids(f"<|{t}|>") for t in ("transcribe", "translate")}
        g.no_timestamps_token_id = tok.convert_tokens_to_ids("<|notimestamps|>")
        g.is_multilingual = multilingual
        # as the released checkpoints suppress some tokens: here the timestamps, so that
        # the random model writes text rather than <|d.dd|> tokens
        g.suppress_tokens = list(range(tok.convert_tokens_to_ids("<|0.00|>"), len(tok)))
    model.save_pretrained(out)
    for f in Path(tokenizer_dir).iterdir():
        if f.is_file():
            shutil.copy(f, Path(out) / f.name)
    return Path(out)


def make_t5_tokenizer(out_dir: Path, seed: int = 0, extra_ids: int = 100, clean_up: bool = False) -> Path:
    """A checkpoint-style directory holding a T5Tokenizer: spiece.model (a unigram
    sentencepiece model trained here, <pad> </s> <unk> first as T5's) and tokenizer.json /
    tokenizer_config.json saved by transformers (<extra_id_N> sentinels after the vocabulary)."""
    import shutil

    from transformers import T5Tokenizer

    out_dir = Path(out_dir)
    work = out_dir / "_spm"
    work.mkdir(parents=True, exist_ok=True)
    _train_t5 = dict(pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus("en", 600, seed) + corpus("fr", 600, seed + 1) + ["Σ ß ü 東 🙂"]),
        model_prefix=str(work / "spiece"), vocab_size=320, model_type="unigram", character_coverage=0.995,
        num_threads=1, seed_sentencepiece_size=10000, minloglevel=2, **_train_t5)
    T5Tokenizer.from_pretrained(work, extra_ids=extra_ids, clean_up_tokenization_spaces=clean_up).save_pretrained(out_dir)
    shutil.copy(work / "spiece.model", out_dir / "spiece.model")
    return out_dir


# One word per content token of the committed trained tiny Marian (ids 2..38), so that text
# in and text out runs on a model that really learned its task (tests/fixtures/data/tiny-marian,
# task.json: the target is the source reversed, each token mapped through a permutation).
TINY_MARIAN_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
                     "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty "
                     "ninety hundred thousand cat dog sun moon red blue green").split()


def tiny_words_sentences(n: int, seed: int, max_words: int = 8) -> list[str]:
    """n short sentences over TINY_MARIAN_WORDS, 1 to max_words words each."""
    rnd = random.Random(seed)
    return [" ".join(rnd.choice(TINY_MARIAN_WORDS) for _ in range(rnd.randint(1, max_words))) for _ in range(n)]


def trained_tiny_marian_with_tokenizer(out: Path) -> Path:
    """A copy of the committed trained tiny Marian with a MarianTokenizer whose pieces are
    TINY_MARIAN_WORDS (marian_with_word_tokenizer)."""
    from hf_reference import checkpoint_dir

    return marian_with_word_tokenizer(checkpoint_dir("tiny-marian"), out)


def marian_with_word_tokenizer(checkpoint: Path, out: Path) -> Path:
    """A copy of a Marian checkpoint with a MarianTokenizer whose pieces are TINY_MARIAN_WORDS:
    a sentencepiece word model (each word one piece "▁word"), vocab.json mapping the 37
    words to ids 2..38, </s> 0, <unk> 1, <pad> the config's pad id (39 in the trained tiny
    Marian, whose content tokens these are) and, in a larger vocabulary, every other id a
    placeholder piece "▁t<id>" (decoded as its text; no text encodes to it). Any other word
    encodes as <unk>."""
    import shutil

    import sentencepiece as spm
    from transformers import MarianTokenizer

    out = Path(out)
    shutil.copytree(checkpoint, out)
    config = json.loads((out / "config.json").read_text())
    work = out / "_spm"
    work.mkdir()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(tiny_words_sentences(2000, 0, 12) + [" ".join(TINY_MARIAN_WORDS)]),
        model_prefix=str(work / "words"), vocab_size=len(TINY_MARIAN_WORDS) + 2, model_type="word",
        num_threads=1, minloglevel=2, bos_id=-1, eos_id=0, unk_id=1, pad_id=-1, eos_piece="</s>",
        unk_piece="<unk>", hard_vocab_limit=False)
    vocab = {"</s>": 0, "<unk>": 1, **{"▁" + w: 2 + i for i, w in enumerate(TINY_MARIAN_WORDS)}}
    pad = config["pad_token_id"]
    for i in range(len(vocab), config["vocab_size"]):
        if i != pad:
            vocab[f"▁t{i}"] = i
    vocab["<pad>"] = pad
    assert sorted(vocab.values()) == list(range(config["vocab_size"])), "the vocabulary must name every id once"
    (work / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    model = str(work / "words.model")
    MarianTokenizer(model, model, str(work / "vocab.json"), source_lang="en", target_lang="fr").save_pretrained(out)
    shutil.rmtree(work)
    return out
