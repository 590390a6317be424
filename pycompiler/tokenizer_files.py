"""Which files of a transformers checkpoint directory make up its tokenizer, and the
meta.json entry that tells the C++ text library (text/) how to read them.

    files, entry = files_of_kind(checkpoint_dir, "marian-spm")
    # files: {"tokenizer/source.spm": Path(...), ...} to copy into the program directory
    # entry: {"kind": "marian-spm", "files": {"source_spm": "tokenizer/source.spm", ...}}

The kind is the one an Architecture names (importers: `Architecture.tokenizer`;
tokenizer_attach.tokenizer_files looks it up by model_type). A checkpoint without the
files gives ({}, None): the program is imported without a
tokenizer, and the text verbs (tokenize, translate, complete) then say so. The special
tokens some classes build at load are added to the entry by tokenizer_template.with_template.
"""
from __future__ import annotations

from pathlib import Path

SUBDIR = "tokenizer"

# kind -> {role: (file name in the checkpoint, required)}
_LAYOUTS = {
    "marian-spm": {"source_spm": ("source.spm", True), "target_spm": ("target.spm", True),
                   "vocab": ("vocab.json", True), "target_vocab": ("target_vocab.json", False),
                   "config": ("tokenizer_config.json", False)},
    "byte-level-bpe": {"tokenizer": ("tokenizer.json", True), "config": ("tokenizer_config.json", False)},
    "t5-spm": {"spm": ("spiece.model", True), "tokenizer": ("tokenizer.json", True),
               "config": ("tokenizer_config.json", False)},
    "whisper-bpe": {"tokenizer": ("tokenizer.json", True), "config": ("tokenizer_config.json", False)},
    "sentencepiece": {"tokenizer": ("tokenizer.json", True), "config": ("tokenizer_config.json", False)},
    "m2m100-spm": {"spm": ("sentencepiece.bpe.model", True), "vocab": ("vocab.json", True),
                   "config": ("tokenizer_config.json", False)},
    # tokenizer.json for the piece ids (fairseq's order) and the language codes' and <mask>'s ids;
    # without it (fairseq-era checkpoints) the C++ library computes that order (text/nllb.cpp)
    "nllb-spm": {"spm": ("sentencepiece.bpe.model", True), "tokenizer": ("tokenizer.json", False),
                 "config": ("tokenizer_config.json", False)},
}

# What an Architecture's `tokenizer` may name: "tokenizer.json" (the kind its tokenizer.json
# is: Llama 3's byte-level BPE or Llama 2's sentencepiece-style BPE) or a kind of _LAYOUTS.
TOKENIZER_KINDS = ("tokenizer.json", *_LAYOUTS)


def files_of_kind(checkpoint_dir, kind: str | None) -> tuple[dict, dict | None]:
    """({name in the program directory: source path}, meta.json "tokenizer" entry), or
    ({}, None) when the checkpoint has no tokenizer files of `kind` (an Architecture's
    `tokenizer`: one of TOKENIZER_KINDS, or None for none read)."""
    ckpt = Path(checkpoint_dir)
    if kind == "tokenizer.json":
        kind = _tokenizer_json_kind(ckpt / "tokenizer.json")
    if kind == "m2m100-spm" and _tokenizer_class(ckpt).startswith("Nllb"):
        kind = "nllb-spm"  # NLLB's checkpoints are model_type m2m_100 too
    if kind is None:
        return {}, None
    files, roles = {}, {}
    for role, (name, required) in _LAYOUTS[kind].items():
        src = ckpt / name
        if not src.is_file():
            if required:
                return {}, None
            continue
        files[f"{SUBDIR}/{name}"] = src
        roles[role] = f"{SUBDIR}/{name}"
    entry = {"kind": kind, "files": roles}
    if kind == "m2m100-spm":
        entry["language_codes"] = _m2m100_language_codes(ckpt / "tokenizer_config.json")
        if entry["language_codes"] is None:
            return {}, None
    if kind == "nllb-spm":
        entry["language_codes"] = _nllb_language_codes(ckpt / "tokenizer_config.json")
    if kind == "whisper-bpe":
        prompt = _whisper_prompt(ckpt)
        if prompt is not None:
            entry["prompt"] = prompt
    return files, entry


def _whisper_prompt(ckpt: Path) -> dict | None:
    """What WhisperForConditionalGeneration.generate reads to build the decoder prompt from
    language= and task=: generation_config.json's lang_to_id and task_to_id (as token
    names: the C++ library takes their ids from tokenizer.json), is_multilingual,
    no_timestamps_token_id, and transformers' language names (TO_LANGUAGE_CODE, not in
    the checkpoint: [name, code] pairs in its order, the usual name of each code first). None when the config has no lang_to_id / task_to_id (an old or
    English-only checkpoint), or when its ids disagree with tokenizer.json's."""
    gen, tj = _read_json(ckpt / "generation_config.json"), _read_json(ckpt / "tokenizer.json")
    if not isinstance(gen, dict) or not isinstance(tj, dict):
        return None
    lang_to_id, task_to_id = gen.get("lang_to_id"), gen.get("task_to_id")
    if not isinstance(lang_to_id, dict) or not isinstance(task_to_id, dict):
        return None
    added = {t.get("content"): t.get("id") for t in tj.get("added_tokens") or [] if isinstance(t, dict)}
    wanted = {**lang_to_id, **{f"<|{t}|>": i for t, i in task_to_id.items()},
              "<|startoftranscript|>": gen.get("decoder_start_token_id")}
    if gen.get("no_timestamps_token_id") is not None:
        wanted["<|notimestamps|>"] = gen["no_timestamps_token_id"]
    if any(added.get(token) != i for token, i in wanted.items()):
        return None
    from transformers.models.whisper.tokenization_whisper import TO_LANGUAGE_CODE

    forced = _forced_prompt(ckpt, gen)
    if forced is None or any(i is not None and i not in added.values() for i in forced):
        return None
    return {"languages": sorted(lang_to_id, key=lang_to_id.get), "tasks": sorted(task_to_id, key=task_to_id.get),
            "no_timestamps": gen.get("no_timestamps_token_id") is not None, "forced_decoder_ids": forced,
            "multilingual": bool(gen.get("is_multilingual", True)),
            "language_names": [[name, code] for name, code in TO_LANGUAGE_CODE.items()]}


def _forced_prompt(ckpt: Path, gen: dict) -> list | None:
    """The ids generate(language=None, task=None) puts after the start token from
    forced_decoder_ids (generation_config.json's, else config.json's): the entries for
    positions 1, 2, ... in order, a null id (the language to detect) kept as None. [] when
    there are none or they do not start at position 1 (transformers ignores them); None
    when they skip a position (transformers refuses them)."""
    forced = gen.get("forced_decoder_ids")
    if forced is None:
        config = _read_json(ckpt / "config.json")
        forced = config.get("forced_decoder_ids") if isinstance(config, dict) else None
    if not isinstance(forced, list) or not forced or not isinstance(forced[0], list) or forced[0][:1] != [1]:
        return []
    out = []
    for position, entry in enumerate(forced, start=1):
        if not (isinstance(entry, list) and len(entry) == 2 and entry[0] == position
                and (entry[1] is None or isinstance(entry[1], int))):
            return None
        out.append(entry[1])
    return out


def _tokenizer_class(ckpt: Path) -> str:
    config = _read_json(ckpt / "tokenizer_config.json")
    return str(config.get("tokenizer_class") or "") if isinstance(config, dict) else ""


def _nllb_language_codes(config_path: Path) -> list:
    """The language codes an NLLB checkpoint's tokenizer adds (its config's extra or
    additional special tokens; else transformers' list, which NllbTokenizer defaults to)."""
    config = _read_json(config_path)
    if not isinstance(config, dict):
        config = {}
    for key in ("extra_special_tokens", "additional_special_tokens"):
        codes = config.get(key)
        if isinstance(codes, list) and codes:
            return [c if isinstance(c, str) else c.get("content") for c in codes]
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    return list(FAIRSEQ_LANGUAGE_CODES)


def _m2m100_language_codes(config_path: Path) -> list | None:
    """transformers' language code list of the checkpoint's set ("m2m100" or "wmt21"),
    in id order: M2M100Tokenizer numbers __xx__ tokens after vocab.json by it."""
    try:
        from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES
    except ImportError:
        return None
    name = "m2m100"
    if config_path.is_file():
        config = _read_json(config_path)
        if not isinstance(config, dict):
            return None
        if not str(config.get("tokenizer_class") or "M2M100").startswith("M2M100"):
            return None  # NLLB's checkpoints are model_type m2m_100 too, with another tokenizer
        name = config.get("language_codes", name)
    codes = FAIRSEQ_LANGUAGE_CODES.get(name)
    return list(codes) if codes else None


def _tokenizer_json_kind(path: Path) -> str | None:
    """byte-level-bpe, sentencepiece (a BPE with "▁" for spaces: from the normalizer
    without a pre-tokenizer or with a Split, or from a Metaspace pre-tokenizer), or None (no
    tokenizer.json, or one of another kind: the C++ library says at load
    what in a file of a known kind it does not support)."""
    import json

    tj = _read_json(path)
    if not isinstance(tj, dict):
        return None
    if (tj.get("model") or {}).get("type") != "BPE":
        return None
    if "ByteLevel" in json.dumps(tj.get("pre_tokenizer")):
        return "byte-level-bpe"
    if tj.get("pre_tokenizer") is None and "\u2581" in json.dumps(tj.get("normalizer"), ensure_ascii=False):
        return "sentencepiece"
    if (tj.get("pre_tokenizer") or {}).get("type") == "Metaspace":  # Llama 2 as transformers 5 saves it
        return "sentencepiece"
    # Gemma as transformers 5 saves it: a Split on " " after Replace(" ", "▁") (the library checks the Split)
    if (tj.get("pre_tokenizer") or {}).get("type") == "Split" and "\u2581" in json.dumps(
            tj.get("normalizer"), ensure_ascii=False):
        return "sentencepiece"
    return None


def _read_json(path: Path):
    """The JSON in `path`; None when it is missing, unreadable or not JSON, and when it is
    not a regular file: read_regular_file neither waits on a FIFO nor reads a device."""
    import json

    from .program_dir import read_regular_file

    try:
        return json.loads(read_regular_file(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None

