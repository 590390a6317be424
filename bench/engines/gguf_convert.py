"""llama.cpp's convert_hf_to_gguf.py on a benchmark checkpoint, with a vocabulary made here.

    python3 bench/engines/gguf_convert.py CONVERTER_DIR CHECKPOINT_DIR OUT.gguf f32|f16

Run by bench/engines/llama_cpp.py in its own process (the converter imports torch and
its own gguf-py). The checkpoints of bench/decoder_only_models.py have no tokenizer
files, and the converter reads one (AutoTokenizer, then a hash check of the BPE
pre-tokenizer for GPT-2 and Qwen, tokenizer.model for Llama). This wrapper imports the
converter unchanged and replaces only the model class's `set_vocab`: it writes a
sentencepiece ("llama") vocabulary of exactly `vocab_size` pieces, piece i being one
Unicode character (`piece(i)`), no merges, no space prefix, no BOS added. llama.cpp's SPM
tokenizer then turns a string of those characters into exactly those ids, and every
generated token back into one character: the benchmark hands llama.cpp the same token ids
as every other engine and reads its ids back (bench/engines/llama_cpp.py). The weights,
the architecture and every hyperparameter come from the converter itself (one default
added: GPT-2's `n_ctx`, from `n_positions`, which transformers 5 no longer saves).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

# code points skipped: surrogates (not encodable), the Unicode noncharacters, and
# U+2581 (SPM's space marker) is below the start anyway
_START = 0x3400


def _skip(cp: int) -> bool:
    return 0xD800 <= cp < 0xE000 or 0xFDD0 <= cp < 0xFDF0 or (cp & 0xFFFE) == 0xFFFE


def pieces(n: int) -> list[str]:
    """The characters of ids 0..n-1 (printable, non-space, one code point each)."""
    out, cp = [], _START
    while len(out) < n:
        if not _skip(cp):
            out.append(chr(cp))
        cp += 1
    return out


def special_ids(checkpoint_dir: Path) -> tuple[int, int | None, int]:
    """vocab size, bos, eos (the first of a list), as bench/engines/decoder_only.py reads them."""
    cfg = json.loads((checkpoint_dir / "config.json").read_text())
    gen_path = checkpoint_dir / "generation_config.json"
    gen = json.loads(gen_path.read_text()) if gen_path.exists() else {}

    def first(x):
        return x[0] if isinstance(x, list) else x

    cfg_text = cfg.get("text_config", cfg)
    return (cfg_text["vocab_size"], first(gen.get("bos_token_id", cfg_text.get("bos_token_id"))),
            first(gen.get("eos_token_id", cfg_text.get("eos_token_id"))))


def _set_vocab(self) -> None:
    import gguf

    vocab, bos, eos = special_ids(Path(self.dir_model))
    tokens = pieces(vocab)
    types = [gguf.TokenType.NORMAL] * vocab
    for i in {bos, eos} - {None}:  # named, so a prompt character can never parse as them
        tokens[i] = f"<|special_{i}|>"
        types[i] = gguf.TokenType.CONTROL
    w = self.gguf_writer
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * vocab)
    w.add_token_types(types)
    w.add_eos_token_id(eos)
    w.add_unk_token_id(eos)
    if bos is not None:
        w.add_bos_token_id(bos)
    w.add_add_bos_token(False)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(False)


def main(argv: list[str]) -> int:
    converter_dir, checkpoint, out, outtype = argv
    sys.path.insert(0, converter_dir)
    sys.path.insert(1, str(Path(converter_dir) / "gguf-py"))
    import convert_hf_to_gguf as conv

    original = conv.get_model_class

    def get_model_class(*args, **kwargs):
        cls = original(*args, **kwargs)
        cls.set_vocab = _set_vocab  # this process converts one model: patching the class is enough
        return cls

    conv.get_model_class = get_model_class
    load_hparams = conv.ModelBase.load_hparams

    def hparams_with_n_ctx(*args, **kwargs):
        # GPT-2's converter reads n_ctx, which transformers 5 no longer writes (n_positions is the same)
        hp = load_hparams(*args, **kwargs)
        if "n_positions" in hp:
            hp.setdefault("n_ctx", hp["n_positions"])
        return hp

    conv.ModelBase.load_hparams = staticmethod(hparams_with_n_ctx)
    sys.argv = ["convert_hf_to_gguf.py", checkpoint, "--outfile", out, "--outtype", outtype]
    conv.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
