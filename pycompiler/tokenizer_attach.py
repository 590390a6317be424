"""import-hf's tokenizer step: carry the checkpoint's tokenizer into the program, or say
why not. A tokenizer the text library cannot read exactly (a file of a kind it does not
read, a setting it does not follow) refuses the import with the reason, never a program
silently without one; `tokenizer=False` (`--no-tokenizer`) imports the model alone.

    attach_tokenizer(builder, "gpt2-ckpt/", "gpt2")   # meta.json "tokenizer" + the files
    why_no_tokenizer("mbart-ckpt/", "mbart")           # "mbart's tokenizer is not read yet"
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from .importers import ARCHITECTURES, UnsupportedConfig
from .tokenizer_files import _LAYOUTS, files_of_kind
from .tokenizer_template import TemplateRefused, with_template

# Files that hold a vocabulary: a checkpoint with one of them has a tokenizer.
_VOCABULARY_FILES = ("tokenizer.json", "tokenizer.model", "spiece.model", "sentencepiece.bpe.model", "source.spm",
                     "vocab.json", "merges.txt", "vocab.txt", "tekken.json")


def _present(ckpt: Path) -> list:
    return [name for name in _VOCABULARY_FILES if (ckpt / name).is_file()]


def tokenizer_kind(model_type: str) -> str | None:
    """The tokenizer kind of model_type's Architecture (importers.ARCHITECTURES); None for
    an architecture whose tokenizer is not read, or a model_type not in the table."""
    arch = ARCHITECTURES.get(model_type)
    return None if arch is None else arch.tokenizer


def tokenizer_files(checkpoint_dir, model_type: str) -> tuple[dict, dict | None]:
    """tokenizer_files.files_of_kind for the kind model_type's Architecture names."""
    return files_of_kind(checkpoint_dir, tokenizer_kind(model_type))


def why_no_tokenizer(checkpoint_dir, model_type: str) -> str:
    """Why tokenizer_files carries nothing from this checkpoint, in words."""
    ckpt = Path(checkpoint_dir)
    present = _present(ckpt)
    if not present:
        return "the checkpoint has no tokenizer files"
    kind = tokenizer_kind(model_type)
    if kind is None:
        return f"{model_type}'s tokenizer is not read yet (it has {', '.join(present)})"
    if kind == "tokenizer.json":
        if not (ckpt / "tokenizer.json").is_file():
            return (f"a {model_type} tokenizer is read from tokenizer.json, which the checkpoint lacks "
                    f"(it has {', '.join(present)})")
        return f"its tokenizer.json is of a kind the text library does not read ({_describe(ckpt / 'tokenizer.json')})"
    for _, (name, required) in _LAYOUTS[kind].items():
        if required and not (ckpt / name).is_file():
            return f"a {kind} tokenizer needs {name}, which the checkpoint lacks (it has {', '.join(present)})"
    return f"its {kind} tokenizer files are incomplete (docs/text.md)"


def _describe(path: Path) -> str:
    from .program_dir import read_regular_file

    try:  # read_regular_file: a FIFO or a device is refused, not waited on or read forever
        tj = json.loads(read_regular_file(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        return f"not readable JSON: {e}"
    if not isinstance(tj, dict):
        return "not a JSON object"
    parts = []
    for key in ("model", "normalizer", "pre_tokenizer"):
        section = tj.get(key)
        parts.append(f"{key} {section.get('type') if isinstance(section, dict) else section}")
    return ", ".join(parts)


def check_tokenizer(files: dict, entry: dict) -> str | None:
    """The text library's reason for refusing these files (it loads them as a program
    directory would hold them), or None when it reads them or this build has no text
    library (then nothing can be checked here; the program still carries the files)."""
    from .. import _C

    if not getattr(_C, "has_text", False):
        return None
    from .program_dir import read_regular_file

    with tempfile.TemporaryDirectory(prefix="tvm-tokenizer-") as tmp:
        for rel, src in files.items():
            dst = Path(tmp) / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            # Copies, not symlinks: the library follows no symlink out of a program directory.
            # read_regular_file refuses a FIFO or a device instead of waiting on or reading it.
            dst.write_bytes(read_regular_file(src))
        (Path(tmp) / "meta.json").write_text(json.dumps({"tokenizer": entry}), encoding="utf-8")
        try:
            _C.Tokenizer.load(tmp)
        except ValueError as e:  # _C.TextError
            return str(e).replace(tmp + "/", "")
    return None


def attach_tokenizer(builder, checkpoint_dir, model_type: str, tokenizer: bool = True) -> None:
    """Has `builder` write the checkpoint's tokenizer into its program directory (the
    files, and meta.json's "tokenizer"). Nothing when the checkpoint has no tokenizer
    files, its model type's tokenizer is not read yet (docs/text.md), or not `tokenizer`;
    UnsupportedConfig when it has files the text library cannot read exactly."""
    if not tokenizer:
        return
    files, entry = tokenizer_files(checkpoint_dir, model_type)
    if entry is None:
        if _present(Path(checkpoint_dir)) and tokenizer_kind(model_type) is not None:
            _refuse(checkpoint_dir, why_no_tokenizer(checkpoint_dir, model_type))
        return
    try:
        entry = with_template(checkpoint_dir, entry)
    except TemplateRefused as e:
        _refuse(checkpoint_dir, str(e))
    reason = check_tokenizer(files, entry)
    if reason is not None:
        _refuse(checkpoint_dir, reason)
    builder.meta["tokenizer"] = entry
    builder.extra_files = files


def _refuse(checkpoint_dir, reason: str):
    raise UnsupportedConfig(
        f"import_hf: {checkpoint_dir}: its tokenizer cannot be carried: {reason}. Import with tokenizer=False "
        "(tensorvm import-hf --no-tokenizer) for a program that takes and gives token ids")
