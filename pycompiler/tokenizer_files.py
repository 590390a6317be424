"""Which files of a transformers checkpoint directory make up its tokenizer, and the
meta.json entry that tells the C++ text library (text/) how to read them.

    files, entry = tokenizer_files(checkpoint_dir, "marian")
    # files: {"tokenizer/source.spm": Path(...), ...} to copy into the program directory
    # entry: {"kind": "marian-spm", "files": {"source_spm": "tokenizer/source.spm", ...}}

A checkpoint without the files gives ({}, None): the program is imported without a
tokenizer, and the text verbs (tokenize, translate, complete) then say so.
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
}

# model_type -> kind (the kinds the C++ library reads)
KIND_OF_MODEL = {"marian": "marian-spm", "gpt2": "byte-level-bpe", "qwen2": "byte-level-bpe",
                 "llama": "byte-level-bpe"}


def tokenizer_files(checkpoint_dir, model_type: str) -> tuple[dict, dict | None]:
    """({name in the program directory: source path}, meta.json "tokenizer" entry), or
    ({}, None) when the checkpoint has no tokenizer files of the kind its model uses."""
    kind = KIND_OF_MODEL.get(model_type)
    if kind is None:
        return {}, None
    ckpt = Path(checkpoint_dir)
    files, roles = {}, {}
    for role, (name, required) in _LAYOUTS[kind].items():
        src = ckpt / name
        if not src.is_file():
            if required:
                return {}, None
            continue
        files[f"{SUBDIR}/{name}"] = src
        roles[role] = f"{SUBDIR}/{name}"
    if kind == "byte-level-bpe" and not _is_byte_level(ckpt / "tokenizer.json"):
        return {}, None  # a tokenizer.json of another kind (Llama 2's sentencepiece BPE, say)
    return files, {"kind": kind, "files": roles}


def _is_byte_level(path: Path) -> bool:
    import json

    try:
        tj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    model = tj.get("model") or {}
    return model.get("type") == "BPE" and "ByteLevel" in json.dumps(tj.get("pre_tokenizer") or tj.get("decoder"))


def attach_tokenizer(builder, checkpoint_dir, model_type: str) -> None:
    """Has `builder` write the checkpoint's tokenizer into its program directory (the
    files, and meta.json's "tokenizer"); nothing when the checkpoint has none."""
    files, entry = tokenizer_files(checkpoint_dir, model_type)
    if entry is not None:
        builder.meta["tokenizer"] = entry
        builder.extra_files = files
