"""The engines of bench/nllb_bench.py: a padded batch of sources translated by an
M2M100 / NLLB checkpoint with beam search, the target language forced as the first
generated token, exactly `new_tokens` tokens per sentence.

Every engine implements (on top of bench/engines/decoder_only.py's conversion and caching)
    prepare(checkpoint_dir, cache_dir) -> notes   one-off conversion, its own process, untimed
    imports() / load(checkpoint_dir, cache_dir, threads)
    encode(ids, mask)                             the encoder alone (CTranslate2: see below)
    generate(ids, mask, lang, num_beams, new_tokens) -> np.int64 [B, new_tokens]
the generated tokens after the decoder start token, the target language first. EOS is
banned until `new_tokens` tokens exist (transformers' min_new_tokens), so every engine
runs the same number of decoder steps whatever the random weights say.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import decoder_only


def _special(checkpoint_dir: Path) -> dict:
    cfg = json.loads((Path(checkpoint_dir) / "config.json").read_text())
    return {k: cfg[f"{k}_token_id"] for k in ("bos", "pad", "eos", "decoder_start")} | {"vocab": cfg["vocab_size"]}


class TensorVM(decoder_only.TensorVM):
    """`Program.generate`: encoder, cross-attention K/V, beam search, processors and
    stopping in one C++ call; the target language is the run-time forced_bos_token_id."""

    def encode(self, ids, mask):
        self.prog.run("encode", ids, mask)

    def generate(self, ids, mask, lang, num_beams, new_tokens):
        out = self.prog.generate(ids, mask, forced_bos_token_id=lang, num_beams=num_beams, do_sample=False,
                                 max_new_tokens=new_tokens, min_new_tokens=new_tokens)
        return np.asarray(out)[:, 1:].astype(np.int64)


class Transformers(decoder_only.Transformers):
    """`M2M100ForConditionalGeneration.generate()`, torch eager, default (sdpa) attention."""

    def load(self, checkpoint_dir, cache_dir, threads):
        import torch
        from transformers import M2M100ForConditionalGeneration

        self.torch = torch
        torch.set_num_threads(threads)
        self.model = M2M100ForConditionalGeneration.from_pretrained(str(checkpoint_dir), dtype=torch.float32).eval()

    def encode(self, ids, mask):
        with self.torch.inference_mode():
            self.model.get_encoder()(input_ids=self.torch.from_numpy(ids), attention_mask=self.torch.from_numpy(mask))

    def generate(self, ids, mask, lang, num_beams, new_tokens):
        torch = self.torch
        with torch.inference_mode():
            out = self.model.generate(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                                      forced_bos_token_id=lang, num_beams=num_beams, do_sample=False,
                                      max_new_tokens=new_tokens, min_new_tokens=new_tokens)
        return out[:, 1:].numpy().astype(np.int64)


def token_names(checkpoint_dir: Path) -> list[str]:
    """CTranslate2 works on token strings: NLLB's four specials by name, every other id by
    its decimal string (the checkpoints have no tokenizer files)."""
    s = _special(checkpoint_dir)
    names = [str(i) for i in range(s["vocab"])]
    for key, name in (("bos", "<s>"), ("pad", "<pad>"), ("eos", "</s>")):
        names[s[key]] = name
    names[3] = "<unk>"  # NllbTokenizer's layout: <s> <pad> </s> <unk>
    return names


class _M2M100Tokenizer:
    """The members of a tokenizer that CTranslate2's M2M100 loader reads."""

    bos_token, pad_token, eos_token, unk_token, unk_token_id = "<s>", "<pad>", "</s>", "<unk>", 3
    special_tokens_map: dict = {}

    def __init__(self, names: list[str]):
        self._names = names

    def get_vocab(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self._names)}

    def convert_ids_to_tokens(self, i: int) -> str:
        return self._names[i]


class CTranslate2(decoder_only.CTranslate2):
    """`ctranslate2.Translator.translate_batch`, the target language as target_prefix,
    min_decoding_length = max_decoding_length = new_tokens (the prefix counts), the whole
    batch at once. Translator has no encoder-only call: `encode` translates with
    max_decoding_length 1 and no prefix (encoder, cross-attention K/V and one decoder
    step over the start token), so its encoder ms is an upper bound."""

    def stub_tokenizer(self, checkpoint_dir):
        return _M2M100Tokenizer(token_names(checkpoint_dir))

    def load(self, checkpoint_dir, cache_dir, threads):
        import ctranslate2

        self.ct2 = ctranslate2
        self.threads = threads
        self.names = token_names(checkpoint_dir)
        self.lookup = {t: i for i, t in enumerate(self.names)}
        self.pad = _special(checkpoint_dir)["pad"]
        self.translator = ctranslate2.Translator(str(self._model_dir(cache_dir)), device="cpu",
                                                 compute_type=self.quantization, inter_threads=1,
                                                 intra_threads=threads)

    def _translate(self, ids, mask, lang, num_beams, length):
        source = [[self.names[t] for t, m in zip(row, mrow) if m] for row, mrow in zip(ids.tolist(), mask.tolist())]
        prefix = None if lang is None else [[self.names[lang]]] * len(source)
        return self.translator.translate_batch(source, prefix, beam_size=num_beams,
                                               max_batch_size=0, max_decoding_length=length,
                                               min_decoding_length=length, return_end_token=True)

    def encode(self, ids, mask):
        self._translate(ids, mask, None, 1, 1)

    def generate(self, ids, mask, lang, num_beams, new_tokens):
        res = self._translate(ids, mask, lang, num_beams, new_tokens)
        out = np.full((len(res), new_tokens), self.pad, np.int64)
        for b, r in enumerate(res):
            toks = [self.lookup[t] for t in r.hypotheses[0]][:new_tokens]
            out[b, :len(toks)] = toks
        return out

    def info(self):
        return {"ctranslate2": self.ct2.__version__, "compute_type": self.translator.compute_type,
                "intra_threads": self.threads, "inter_threads": 1}


ENGINES = {
    "tensorvm": lambda: TensorVM("float32"),
    "tensorvm-int8": lambda: TensorVM("int8"),
    "tensorvm-w8a8": lambda: TensorVM("w8a8"),
    "transformers": Transformers,
    "ctranslate2-float32": lambda: CTranslate2("float32"),
    "ctranslate2-int8": lambda: CTranslate2("int8"),
}
REFERENCE = "transformers"


def make(name: str):
    if name not in ENGINES:
        raise KeyError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
    return ENGINES[name]()
