"""`tensorvm run|replay PROGRAM tokenize|translate|complete --text ... | --text-file F`:
the text verbs of tensorvm-run (cli/text_verbs.cpp) on the Python side, one output
line per input line, each line run on its own through the program's `generate` (in the
C++ VM, or replayed with the reference ops), encoded and decoded by the C++ tokenizer."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from .cli_io import CLIError, build_inputs

VERBS = ("tokenize", "translate", "complete")


def read_lines(text, text_file) -> list:
    """The lines of --text, or of --text-file (a final newline ends the last line)."""
    if (text is None) == (text_file is None):
        raise CLIError("give one of --text or --text-file")
    if text_file is not None:
        try:
            raw = Path(text_file).read_bytes()
        except OSError as e:
            raise CLIError(f"--text-file {text_file}: {e.strerror or e}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CLIError(f"--text-file {text_file}: the text is not valid UTF-8 (byte {e.start})") from None
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    if len(lines) > 1 and lines[-1] == "" and text.endswith("\n"):
        lines.pop()
    return lines


def run_verb(program, verb: str, lines: list, arg_pairs, replay: bool, src_lang=None, tgt_lang=None) -> None:
    tok = program.tokenizer
    if src_lang is not None:
        if verb == "complete":
            raise CLIError("complete: --src-lang goes with tokenize and translate")
        tok.language_id(src_lang)  # an unknown language is an error before any line runs
    if verb == "tokenize":
        if arg_pairs or tgt_lang is not None:
            raise CLIError("tokenize takes no --arg or --tgt-lang")
        for line in lines:
            print(" ".join(map(str, tok.encode(line, src_lang=src_lang))))
        return
    if tgt_lang is not None:
        if verb == "complete":
            raise CLIError("complete: --tgt-lang goes with translate")
        if any(a.split("=", 1)[0] == "forced_bos_token_id" for a in arg_pairs or []):
            raise CLIError(f"{verb}: give --tgt-lang or --arg forced_bos_token_id, not both")
        arg_pairs = list(arg_pairs or []) + [f"forced_bos_token_id={tok.language_id(tgt_lang)}"]
    decoder_only = program.meta.get("is_encoder_decoder") is False
    if verb == "translate" and decoder_only:
        raise CLIError(f"translate: {program.path} is a decoder-only program; use the verb complete")
    if verb == "complete" and not decoder_only:
        raise CLIError(f"complete: {program.path} is not a decoder-only program; use the verb translate")
    options = SimpleNamespace(arg=arg_pairs)
    for i, line in enumerate(lines, 1):
        ids = tok.encode(line, src_lang=src_lang)
        if not ids:
            raise CLIError(f"{verb}: input line {i} gives no tokens (an empty prompt)")
        inputs = build_inputs(program, "generate", options, id_rows=[ids])
        seqs = (program.replay if replay else program.run)("generate", *inputs)
        seqs = seqs[0] if isinstance(seqs, tuple) else seqs
        for row in seqs.tolist():
            print(tok.decode(row[len(ids):] if decoder_only else row, True))
