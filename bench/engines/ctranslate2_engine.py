"""CTranslate2 (pip package), float32 and int8.

Conversion: ``ctranslate2.converters.TransformersConverter`` on the checkpoint
directory, with one change: our checkpoints have no tokenizer files (no
source.spm / vocab.json), and the converter only uses the tokenizer for the
vocabulary and the EOS / UNK names. ``_IdVocabConverter`` overrides
``load_tokenizer`` with a stub whose vocabulary names every id by its decimal
string (0 -> "</s>", 1 -> "<unk>", pad -> "<pad>", as Marian does). The weights
path is the converter's own (MarianMTLoader: drops the pad row from the
embeddings / output projection and starts the decoder from a zero embedding).
CTranslate2 is fed those token strings, and its output strings are mapped back
to ids, so the engines see the very same token ids.

Fixed-length generation: CTranslate2 has no forced-EOS processor. transformers'
last step (forced EOS) adds log-prob 0 to every beam, so the result equals
CTranslate2 decoding ``max_new_tokens - 1`` tokens with EOS disabled
(``min_decoding_length``) and the harness appending EOS. CTranslate2 therefore
runs one decoder step fewer than the other engines (``decode_steps_offset = -1``;
about 3% less work at 32 new tokens, in CTranslate2's favour).
Bad-words (pad) ban: pad is not in CTranslate2's vocabulary at all.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from .base import Engine, EngineUnavailable, MarianIds, pad_after_eos

EOS_NAME, UNK_NAME, PAD_NAME = "</s>", "<unk>", "<pad>"


def id_names(ids: MarianIds, vocab_size: int) -> list[str]:
    names = [str(i) for i in range(vocab_size)]
    names[ids.eos] = EOS_NAME
    names[ids.unk] = UNK_NAME
    names[ids.pad] = PAD_NAME
    return names


class _IdVocabTokenizer:
    """The few members of a tokenizer that the CTranslate2 Marian loader uses."""

    eos_token = EOS_NAME
    unk_token = UNK_NAME
    pad_token = PAD_NAME

    def __init__(self, names: list[str]):
        self._names = names

    def get_vocab(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self._names)}


def _converter_class():
    from ctranslate2.converters import TransformersConverter

    class _IdVocabConverter(TransformersConverter):
        def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
            cfg = json.loads((Path(model_name_or_path) / "config.json").read_text())
            ids = MarianIds.from_checkpoint(model_name_or_path)
            if ids.unk != 1 or ids.pad != cfg["vocab_size"] - 1:
                raise ValueError("expected the Marian layout: UNK = 1, PAD = last id")
            return _IdVocabTokenizer(id_names(ids, cfg["vocab_size"]))

    return _IdVocabConverter


class CTranslate2Engine(Engine):
    encode_is_separate = False  # Translator has no encoder-only call
    decode_steps_offset = -1

    def __init__(self, quantization: str = "float32"):
        self.quantization = quantization
        self.precision = "int8" if quantization.startswith("int8") else "float32"
        self.name = f"ctranslate2-{quantization}"

    def _model_dir(self, cache_dir: Path) -> Path:
        return cache_dir / f"ct2-{self.quantization}"

    def prepare(self, checkpoint_dir: Path, cache_dir: Path) -> dict:
        try:
            import ctranslate2
        except ImportError as e:  # pragma: no cover
            raise EngineUnavailable(f"ctranslate2 not installed: {e}") from e
        out = self._model_dir(cache_dir)
        stamp = out / "BENCH_SOURCE"
        want = f"{checkpoint_dir.resolve()} ctranslate2={ctranslate2.__version__}\n"
        if stamp.exists() and stamp.read_text() == want:
            return {"convert_s": 0.0, "cached": True}
        t0 = time.perf_counter()
        _converter_class()(str(checkpoint_dir)).convert(str(out), quantization=self.quantization, force=True)
        stamp.write_text(want)
        return {"convert_s": round(time.perf_counter() - t0, 2), "cached": False}

    def imports(self) -> None:
        try:
            import ctranslate2  # noqa: F401
        except ImportError as e:  # pragma: no cover
            raise EngineUnavailable(f"ctranslate2 not installed: {e}") from e

    def load(self, checkpoint_dir: Path, cache_dir: Path, threads: int) -> float:
        try:
            import ctranslate2
        except ImportError as e:  # pragma: no cover
            raise EngineUnavailable(f"ctranslate2 not installed: {e}") from e
        self.ct2 = ctranslate2
        self.threads = threads
        self.ids = MarianIds.from_checkpoint(checkpoint_dir)
        cfg = json.loads((Path(checkpoint_dir) / "config.json").read_text())
        self.names = id_names(self.ids, cfg["vocab_size"])
        self.lookup = {t: i for i, t in enumerate(self.names)}
        t0 = time.perf_counter()
        self.translator = ctranslate2.Translator(
            str(self._model_dir(cache_dir)),
            device="cpu",
            compute_type=self.quantization,
            inter_threads=1,
            intra_threads=threads,
        )
        return time.perf_counter() - t0

    def _source(self, ids: np.ndarray, mask: np.ndarray) -> list[list[str]]:
        return [[self.names[t] for t, m in zip(row, mrow) if m] for row, mrow in zip(ids.tolist(), mask.tolist())]

    def translate(self, ids, mask, num_beams, max_decoding_length, min_decoding_length):
        return self.translator.translate_batch(
            self._source(ids, mask),
            beam_size=num_beams,
            max_batch_size=0,  # the whole batch at once, like the other engines
            max_decoding_length=max_decoding_length,
            min_decoding_length=min_decoding_length,
            return_end_token=True,
            return_scores=False,
        )

    def generate(self, ids, mask, num_beams, max_new_tokens, min_new_tokens=None):
        # transformers' forced EOS at max_length == decode max_new_tokens - 1 tokens, then EOS.
        steps = max_new_tokens - 1
        min_len = min(min_new_tokens or 0, steps)
        results = self.translate(ids, mask, num_beams, steps, max(min_len, 1) if steps else 0)
        B = ids.shape[0]
        out = np.full((B, 1 + max_new_tokens), self.ids.pad, dtype=np.int64)
        out[:, 0] = self.ids.decoder_start
        for b, r in enumerate(results):
            toks = [self.lookup[t] for t in r.hypotheses[0]][:steps]
            if not toks or toks[-1] != self.ids.eos:
                toks.append(self.ids.eos)  # forced EOS (transformers' ForcedEOSTokenLogitsProcessor)
            out[b, 1 : 1 + len(toks)] = toks
        # trim to the longest row, as transformers does
        lengths = [(np.nonzero(row[1:] == self.ids.eos)[0][:1] + 2).tolist() or [row.size] for row in out]
        T = max(l[0] for l in lengths)
        return pad_after_eos(out[:, :T], self.ids.eos, self.ids.pad)

    def encode_estimate_call(self, ids, mask, num_beams=1):
        """Encoder + cross-attention K/V + one decoder step (used to derive encoder ms)."""
        self.translate(ids, mask, num_beams, 1, 1)

    def info(self) -> dict:
        return {
            "ctranslate2": self.ct2.__version__,
            "compute_type": self.translator.compute_type,
            "intra_threads": self.threads,
            "inter_threads": 1,
        }
