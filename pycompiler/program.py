"""A program directory opened from Python: `Program.run` in the C++ VM, `.replay` in
Python, `.generate` over its `generate` function. Reading the directory is
program_dir.py's job; this module only runs what it reads."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Optional

from .. import _C
from . import generation, ir, weights_io
from .inputs import coerce_inputs, shape_result
from .ir_check import parse
from .program_dir import PROGRAM_FILE, WEIGHTS_FILE, ProgramError, read_meta, read_program_text
from .replay import Replayer


def _signature(info: dict) -> ir.Function:
    """An ir.Function with the signature the C++ loader resolved (Program.function_info)."""
    params = [ir.Param(n, t) for n, t in zip(info["params"], info["param_types"])]
    return_types = list(info["return_types"])
    return ir.Function(info["name"], params, return_types, info.get("returns_tuple", len(return_types) > 1))


class Program:
    """A program directory opened from Python: `.run` in the C++ VM, `.replay` in Python.

    One Program may be shared by any number of threads: each `run` (and `generate`,
    `translate`, ...) checks a C++ Session out of the program's pool for that call
    only (docs/python.md, "Threads")."""

    def __init__(self, path, num_threads: int = 1, max_instructions: int = 0, copy_weights: bool = False,
                 arena_bytes: int = 0):
        """`max_instructions` bounds one run (0: no limit; see SessionOptions); with
        `copy_weights` the weights are read into memory instead of mapped, so a file
        truncated in place later cannot raise SIGBUS (docs/runtime.md); `arena_bytes`
        carves every tensor of a run from an arena of that size (docs/runtime.md, "A
        memory arena"; `memory()` measures what a run needs)."""
        self.path = Path(path)
        if not self.path.is_dir():
            raise ProgramError(f"{self.path}: not a program directory (expected a directory with {PROGRAM_FILE})")
        try:
            self.ir = read_program_text(self.path)
        except (OSError, UnicodeDecodeError) as e:
            raise ProgramError(f"{self.path / PROGRAM_FILE}: {e}") from None
        self.meta = read_meta(self.path)
        self.num_threads = num_threads
        self.max_instructions = max_instructions
        self.copy_weights = copy_weights
        self.arena_bytes = arena_bytes
        self._module: Optional[ir.Module] = None
        self._signatures: Optional[ir.Module] = None
        self._vm_program = None
        self._init_sessions()
        self._replayer = None
        self._tokenizer = None

    def _init_sessions(self) -> None:
        self._pool = None
        self._local = threading.local()  # .session: the calling thread's own
        self._lock = threading.RLock()  # loads the program and makes the pool once

    @classmethod
    def from_bytes(cls, program_text, weights=None, meta=None, num_threads: int = 1,
                   max_instructions: int = 0) -> "Program":
        """A program from its text (str or UTF-8 bytes), its weights (the bytes of a
        weights.safetensors, or None) and its meta (a dict, meta.json's text, or None),
        all in memory; the C++ loader checks them as it checks a directory and copies
        the weights, so the caller's buffer may be dropped. `replay` needs a directory."""
        if isinstance(program_text, (bytes, bytearray, memoryview)):
            try:
                program_text = bytes(program_text).decode("utf-8")
            except UnicodeDecodeError as e:
                raise ProgramError(f"program text (in memory): {e}") from None
        if not isinstance(program_text, str):
            raise TypeError(f"load_bytes: the program text must be str or bytes, not {type(program_text).__name__}")
        if isinstance(meta, dict):
            meta_text = json.dumps(meta)
        elif isinstance(meta, (bytes, bytearray)):
            meta_text = bytes(meta).decode("utf-8", errors="replace")
        else:
            meta_text = meta or ""
        if weights is not None and not isinstance(weights, (bytes, bytearray, memoryview)):
            raise TypeError(f"load_bytes: weights must be bytes (a weights.safetensors), not {type(weights).__name__}")
        self = cls.__new__(cls)
        self.path = None
        self.ir = program_text.replace("\r\n", "\n").replace("\r", "\n")
        self.num_threads = num_threads
        self.max_instructions = max_instructions
        self.copy_weights = True
        self.arena_bytes = 0
        self._module = self._signatures = self._replayer = None
        self._init_sessions()
        # Loaded now, so bad bytes fail here rather than at the first run.
        self._vm_program = _C.Program.from_memory(self.ir, weights, meta_text)
        self.meta = json.loads(self._vm_program.meta_json)
        return self

    def __repr__(self) -> str:
        return f"<tensorvm.Program {self.path or '(from memory)'} functions={self.functions}>"

    @property
    def module(self) -> ir.Module:
        """The whole program as IR data, parsed (and checked) in Python on first use: for
        what reads the bodies (aot, dot, diff, info). Signatures: `function`."""
        if self._module is None:
            with self._lock:  # threads starting at once parse it once
                if self._module is None:
                    self._module = parse(self.ir, filename=str(self.path / PROGRAM_FILE) if self.path else "program.py")
        return self._module

    def _signature_module(self) -> ir.Module:
        """Every function's signature, its body left empty: from the program the C++
        loader resolved (function_info) where this build has the VM, so that running a
        program never parses its text a second time in Python; else from `module`."""
        if self._signatures is None:
            if self._module is None and self._replayer is not None:
                return self._replayer.module  # replayed only: parsed and checked already, no C++ load
            if self._module is not None or not hasattr(_C, "Program"):
                return self.module
            vm = self._vm()
            self._signatures = ir.Module([_signature(vm.function_info(name)) for name in vm.functions()])
        return self._signatures

    def function(self, name: str) -> ir.Function:
        """The signature of function `name` (params, return types; the body only where
        `module` was already parsed). KeyError names the program's functions."""
        return self._signature_module().function(name)

    @property
    def functions(self) -> list[str]:
        return self._signature_module().function_names

    def calls(self, callee: str) -> bool:
        """Whether some function calls `callee` (an op, a builtin such as emit, a function):
        from the C++ program's op counts, or from `module` where it is parsed already."""
        if self._module is None and hasattr(_C, "Program"):
            vm = self._vm()
            return any(callee in vm.function_info(name)["op_counts"] for name in vm.functions())
        return any(getattr(s, "callee", None) == callee for f in self.module.functions for s in f.body)

    def signature(self, function: str) -> str:
        return self.module.function(function).signature()

    @property
    def session(self):
        """A C++ Session of the calling thread's own, made on its first use: for direct
        use (`memory_stats`, `instructions_executed`, a profiler). `run` does not use it."""
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = _C.Session(self._vm(), self.num_threads,
                                                       max_instructions=self.max_instructions,
                                                       arena_bytes=self.arena_bytes)
        return session

    def _vm(self):
        """The C++ Program, loaded on first use."""
        if self._vm_program is None:
            if not hasattr(_C, "Program") or not hasattr(_C, "Session"):
                raise NotImplementedError("this build of tensorvm has no VM bindings (tensorvm._C.Program/Session)")
            with self._lock:
                if self._vm_program is None:
                    self._vm_program = _C.Program.load(str(self.path), copy_weights=self.copy_weights)
        return self._vm_program

    def _sessions(self):
        """The program's SessionPool (vm/session_pool.h), made on first use."""
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = _C.SessionPool(self._vm(), self.num_threads, max_instructions=self.max_instructions,
                                                arena_bytes=self.arena_bytes)
        return self._pool

    def memory(self, function: str, *inputs: Any) -> dict:
        """Runs `function` on `inputs` in the C++ VM under a measuring arena
        (vm/memory_report.h): `arena_bytes`, the arena it needs (a session with
        `arena_bytes` at least this runs the same inputs), `peak_bytes`, the most bytes
        of tensors alive at once, `largest_tensor`, `allocations`, `instructions`,
        `high_water_at` (the instruction that last raised the arena's high-water mark),
        and `outputs` as `run` returns them. The figures hold for these inputs: a
        while_loop runs as often as they make it (docs/runtime.md, "A memory arena")."""
        fn = self.function(function)
        report = _C.measure_memory(self._vm(), function, coerce_inputs(fn, inputs), self.num_threads)
        report["outputs"] = shape_result(fn, report["outputs"])
        return report

    def run(self, function: str, *inputs: Any, on_emit=None) -> Any:
        """Runs `function` in the C++ VM; returns a value, a tuple of values, or None.
        `on_emit(channel, value)` receives the program's emits (docs/ir.md, emit);
        returning False from it answers "stop". Safe from any thread, and from inside
        an on_emit of another run: each call runs on a Session of its own. Trailing
        options (parameters of type Any) left out are None."""
        fn = self.function(function)
        return shape_result(fn, self._sessions().run(function, coerce_inputs(fn, inputs), on_emit))

    def generate(self, input_ids=None, attention_mask=None, **kwargs) -> Any:
        """transformers-style `generate` over the program's `generate` function, in the
        C++ VM (see tensorvm.pycompiler.generation); Whisper's takes input_features."""
        return generation.generate(self, input_ids, attention_mask, **kwargs)

    @property
    def tokenizer(self):
        """The program's tokenizer (C++, text/): `.encode(text) -> ids`,
        `.decode(ids, skip_special_tokens=True) -> text`; loaded on first use."""
        if self._tokenizer is None:
            if not getattr(_C, "has_text", False):
                raise NotImplementedError("this build of tensorvm has no text library (built without "
                                          "libsentencepiece-dev and libpcre2-dev; see docs/text.md)")
            if not self.meta.get("tokenizer"):
                raise ProgramError(f"{self.path} has no tokenizer (it was imported from a checkpoint without "
                                   "tokenizer files); give token ids instead")
            self._tokenizer = _C.Tokenizer.load(str(self.path))
        return self._tokenizer

    def translate(self, texts, src_lang=None, tgt_lang=None, **generate_kwargs) -> list:
        """Texts in, texts out for an encoder-decoder program: encode each text,
        `generate` on the batch, decode each sequence with skip_special_tokens (one
        output per returned sequence). M2M100 and NLLB: `src_lang` ("fr", "fra_Latn")
        replaces the source language the program was imported with, and `tgt_lang`
        forces the output's language (generate's forced_bos_token_id), as
        transformers' translation pipeline does."""
        if self.meta.get("is_encoder_decoder") is False:
            raise ValueError(f"translate: {self.path} is a decoder-only program; use complete")
        if tgt_lang is not None:
            if "forced_bos_token_id" in generate_kwargs:
                raise ValueError("translate: give tgt_lang or forced_bos_token_id, not both")
            generate_kwargs["forced_bos_token_id"] = self.tokenizer.language_id(tgt_lang)
        return self._text_generate("translate", texts, generate_kwargs, left_pad=False, src_lang=src_lang)

    def complete(self, texts, **generate_kwargs) -> list:
        """Prompts in, continuations out for a decoder-only program: the prompts are
        left-padded as transformers pads them, and only the generated text is returned."""
        if self.meta.get("is_encoder_decoder") is not False:
            raise ValueError(f"complete: {self.path} is not a decoder-only program; use translate")
        return self._text_generate("complete", texts, generate_kwargs, left_pad=True)

    def transcribe(self, audio, language=None, task=None, decoder_input_ids=None, max_new_tokens=None,
                   num_beams=None, return_timestamps=False) -> list:
        """Audio in, texts out for a Whisper program: `audio` is 16 kHz f32 samples, one clip
        (1-D), a batch [batch, samples] or a list of clips (padded with zeros to the longest,
        which changes nothing: each is padded or cut to 30 s). `language` ("fr", "french")
        (or a list, one per clip) and `task` ("transcribe", "translate") build the decoder
        prompt as WhisperForConditionalGeneration.generate(language=, task=) does (with the
        program's tokenizer: <|startoftranscript|> <|fr|> <|translate|> <|notimestamps|>); without a
        language the prompt is `decoder_input_ids`, else, as generate does, the language of
        each clip is detected (the program's detect_language_audio: transformers'
        detect_language) when the checkpoint has lang_to_id, else the decoder starts from
        decoder_start_token_id alone. Each sequence is decoded with
        skip_special_tokens, so the prompt does not reach the text.

        return_timestamps=True: generate's return_timestamps (Whisper's timestamp rule; the
        prompt loses <|notimestamps|>), and each clip gives a list of segments, dicts
        {"start", "end" (seconds), "text", "tokens"}, cut as transformers' generate cuts
        one 30-s window (cli/whisper_segments.h, the parser tensorvm-run --timestamps uses)."""
        import numpy as np

        if "transcribe" not in self.functions:
            raise ValueError(f"transcribe: {self.path} has no transcribe function (it is not a Whisper program)")
        if isinstance(audio, (list, tuple)) and audio and np.ndim(audio[0]) == 1:
            clips = [np.asarray(a, dtype=np.float32) for a in audio]
            audio = np.zeros((len(clips), max(len(c) for c in clips)), np.float32)
            for i, c in enumerate(clips):
                audio[i, :len(c)] = c
        audio = np.asarray(audio, dtype=np.float32)
        if audio.ndim == 1:
            audio = audio[None, :]
        if audio.ndim != 2:
            raise ValueError(f"transcribe: audio must be [samples] or [batch, samples], got shape {list(audio.shape)}")
        tok = self.tokenizer
        table = "prompt" in (self.meta.get("tokenizer") or {})
        if language is not None or task is not None or (decoder_input_ids is None and table):
            if decoder_input_ids is not None:
                raise ValueError("transcribe: give language/task or decoder_input_ids, not both")
            decoder_input_ids = self._whisper_prompt(tok, audio, language, task)
        if return_timestamps and self.meta.get("no_timestamps_token_id") is None:
            raise ValueError(f"transcribe: return_timestamps needs a Whisper program whose generation_config has "
                             f"no_timestamps_token_id ({self.path} has none)")
        if return_timestamps:
            seqs = self.run("transcribe", audio, decoder_input_ids, max_new_tokens, num_beams, True)
            return [self._segments(tok, r) for r in np.asarray(seqs)]
        seqs = self.run("transcribe", audio, decoder_input_ids, max_new_tokens, num_beams)
        return tok.decode_batch([list(map(int, r)) for r in np.asarray(seqs)], True)

    def _segments(self, tok, row) -> list:
        """One transcribe row's segments ({"start", "end", "text", "tokens"})."""
        m = self.meta
        cut = _C.whisper_segments([int(t) for t in row], int(m["eos_token_id"]), int(m["no_timestamps_token_id"]) + 1,
                                  int(m["max_source_positions"]))
        return [{"start": start, "end": end, "text": tok.decode(tokens, True), "tokens": tokens}
                for start, end, tokens in cut]

    def _whisper_prompt(self, tok, audio, language, task):
        """transcribe's [batch, n] prompt as WhisperForConditionalGeneration.generate builds it,
        built by tensorvm-run's code (cli/text_verbs.h transcribe_prompt, _C.transcribe_prompt);
        without a language, each clip's is detected by the program (detect_language_audio)."""
        per_row = isinstance(language, (list, tuple))
        if per_row and len(language) != audio.shape[0]:
            raise ValueError(f"transcribe: {len(language)} languages for {audio.shape[0]} clips (give one per clip, "
                             "or one for all)")
        if per_row and any(lang is None for lang in language):
            raise TypeError("transcribe: a list of languages holds None (give a language for every clip, or "
                            "language=None to detect them all)")
        languages = list(language) if per_row else [language or ""]
        try:  # the tokenizer's own errors, named by this call's arguments
            for lang in languages:
                tok.decoder_prompt(lang or None, task)
        except ValueError as e:
            raise ValueError(f"transcribe: language={language!r} task={task!r}: {e}") from None
        return _C.transcribe_prompt(self._vm(), str(self.path), audio, languages, task or "",
                                    threads=self.num_threads, max_instructions=self.max_instructions)

    def _text_generate(self, verb: str, texts, generate_kwargs, left_pad: bool, src_lang=None) -> list:
        if isinstance(texts, str):
            raise TypeError(f"{verb} takes a list of texts (got one str: wrap it in a list)")
        texts = list(texts)
        if not texts:
            return []
        rows = self.tokenizer.encode_batch(texts, src_lang=src_lang)
        return self._generate_rows(verb, rows, generate_kwargs, left_pad)

    def _generate_rows(self, verb: str, rows: list, generate_kwargs, left_pad: bool) -> list:
        """Token-id rows (not empty) in, decoded texts out: one padded `generate` on the
        batch (tensorvm.ray calls this with the rows it kept)."""
        import numpy as np

        for i, r in enumerate(rows):
            if not r:
                raise ValueError(f"{verb}: text {i} gives no tokens (an empty prompt)")
        tok = self.tokenizer
        pad = int(self.meta.get("pad_token_id", 0) or 0)
        width = max(len(r) for r in rows)
        ids = np.full((len(rows), width), pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, r in enumerate(rows):
            cols = slice(width - len(r), width) if left_pad else slice(0, len(r))
            ids[i, cols] = r
            mask[i, cols] = 1
        out = self.generate(ids, mask, **generate_kwargs)
        seqs = np.asarray(getattr(out, "sequences", out))
        if left_pad:  # a decoder-only program returns the prompt too
            seqs = seqs[:, width:]
        return tok.decode_batch([list(map(int, r)) for r in seqs], True)

    def profile(self, function: str, *inputs: Any, warmup: int = 0, repeat: int = 1, trace: bool = True,
                cpu_time: bool = False, **named: Any):
        """Runs `function` in the C++ VM under the profiler (after `warmup` unmeasured
        runs, `repeat` times); inputs by position or by name. Returns a Profile: op,
        call and instruction tables, and `.trace(path)` for a Chrome trace (profile.py).
        `cpu_time` measures the thread's CPU time instead of wall time."""
        from .profile import profile

        return profile(self, function, *inputs, warmup=warmup, repeat=repeat, trace=trace, cpu_time=cpu_time, **named)

    def replay(self, function: str, *inputs: Any, on_emit=None) -> Any:
        """Runs `function` line by line in Python with the reference ops (`on_emit` as in run)."""
        if self.path is None:
            raise NotImplementedError("replay reads its weights from a program directory; this program was loaded "
                                      "from memory (save it with tensorvm.export, or replay the directory it came from)")
        if self._replayer is None:
            self._replayer = Replayer(self.path, text=self.ir)
        return self._replayer.run(function, *inputs, on_emit=on_emit)

    def weights_info(self) -> list[tuple[str, str, tuple, int]]:
        entries, _, _ = weights_io.read_header(self.path / WEIGHTS_FILE)
        return [(e.name, e.dtype, e.shape, e.nbytes) for e in entries.values()]


def load_bytes(program_text, weights=None, meta=None, num_threads: int = 1, max_instructions: int = 0) -> Program:
    """A program from memory: its text, the bytes of its weights.safetensors and its meta
    (see Program.from_bytes); the C++ side is vm::Program::from_memory."""
    return Program.from_bytes(program_text, weights, meta, num_threads=num_threads, max_instructions=max_instructions)


def load(path, num_threads: int = 1, max_instructions: int = 0, copy_weights: bool = False,
         arena_bytes: int = 0) -> Program:
    """Opens a program directory written by export()."""
    return Program(path, num_threads=num_threads, max_instructions=max_instructions, copy_weights=copy_weights,
                   arena_bytes=arena_bytes)
