"""`tensorvm run|replay PROGRAM tokenize|translate|complete --text ... | --text-file F`,
and transcribe's transcript: tensorvm-run's own text verbs (cli/text_verbs.h, bound as
_C.run_text_verb and _C.print_as_text), their lines written to sys.stdout as they come,
so both command lines print the same bytes. `replay` runs `generate` with the reference
ops (Program.replay) in place of the C++ VM."""
from __future__ import annotations

import os
import sys

from .cli_io import parse_args

VERBS = ("tokenize", "translate", "complete")


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()  # a line at a time, as tensorvm-run flushes


def _bytes(value):
    """A command-line string as the bytes it came as (os.fsencode: a stray byte kept)."""
    return None if value is None else os.fsencode(value)


def run_verb(program, args, replay: bool) -> int:
    """The text verb args.function of `program`, with the options of `args` (argparse)."""
    from .. import _C

    others = any(getattr(args, name, None) for name in
                 ("inputs", "outputs", "ids", "decoder_ids", "wav", "time", "stream", "profile", "trace"))
    return _C.run_text_verb(program._vm(), str(program.path), args.function, _write, text=_bytes(args.text),
                            text_file=_bytes(args.text_file), src_lang=args.src_lang or "",
                            tgt_lang=args.tgt_lang or "", language=args.language or "", task=args.task or "",
                            args=parse_args(args.arg or []), others=others,
                            replay=program.replay if replay else None, threads=program.num_threads,
                            max_instructions=program.max_instructions)


def print_transcript(program, sequences) -> bool:
    """transcribe's sequences printed as text, as tensorvm-run prints them; False (nothing
    printed) when the program has no tokenizer."""
    from .. import _C

    return _C.print_as_text(str(program.path), sequences, _write)


def print_segments(program, sequences, fmt: str) -> None:
    """transcribe --timestamps' sequences printed as segments, as tensorvm-run prints them."""
    from .. import _C

    _C.print_segments(program._vm(), str(program.path), sequences, fmt or "", _write)


def run_long_transcribe(program, args):
    """transcribe --timestamps on audio longer than a window (or with long-form --arg options:
    temperature, condition_on_prev_tokens, the thresholds, prompt_ids, ...), run and printed
    as tensorvm-run does it (cli/whisper_longform.h run_long_transcribe): the tokens of all
    segments [1, n], or None (nothing printed) when transcribe runs as a plain function."""
    from .. import _C
    from .cli_io import parse_args

    return _C.run_long_transcribe(program._vm(), str(program.path), wav=args.wav or "", inputs=args.inputs or "",
                                  decoder_ids=args.decoder_ids or "", args=parse_args(args.arg or []),
                                  language=args.language or "", task=args.task or "",
                                  timestamps=bool(getattr(args, "timestamps", False)), format=args.format or "",
                                  write=_write, threads=program.num_threads, max_instructions=program.max_instructions)
