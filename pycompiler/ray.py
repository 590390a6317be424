"""tensorvm on Ray Data: a `map_batches` callable class that loads a program once per actor
and translates, completes or transcribes batches, one output per row (docs/scale.md).

    import ray, tensorvm.ray
    ds = ray.data.read_text("corpus.txt")                    # a column "text"
    out = tensorvm.ray.map_batches(ds, "opus.tvm", actors=4, threads_per_actor=2,
                                   batch_size=64, generate_options={"num_beams": 4})
    out.write_parquet("out/")                                 # text, translation, error

Ray is imported only when a dataset is mapped (`import tensorvm` never needs it); the class
itself needs only tensorvm (and pyarrow, which Ray brings, for pyarrow batches), so Ray
pickles it by reference to this module.

A bad row (not a str, text that is not UTF-8, a source longer than the program's positions,
a clip that is not 1-D finite audio, a row the generator refuses) gets its message in the
error column and None as output; the other rows of its batch are still generated. A batch
whose `generate` fails as a whole is run again row by row, so one row cannot take down
its neighbours. Errors that are not the row's fault (an actor killed, out of memory) are
Ray's: the actor is restarted (`max_restarts`) and the batch resubmitted (`max_task_retries`).
A batch's output is only kept when its call returns, so a retried batch is neither lost nor
counted twice."""
from __future__ import annotations

import warnings
from typing import Any, Optional

from .program import load

VERBS = ("translate", "complete", "transcribe")
DEFAULT_OUTPUT = {"translate": "translation", "complete": "completion", "transcribe": "transcript"}


def _text_problem(value) -> Optional[str]:
    """Why a text cell cannot be tokenized, or None."""
    if not isinstance(value, str):
        return f"TypeError: expected a str, got {type(value).__name__}"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:  # a lone surrogate: no UTF-8 spelling, the tokenizer cannot take it
        return f"UnicodeEncodeError: the text is not valid UTF-8 ({e.reason} at character {e.start})"
    return None


def _audio_problem(value):
    """(clip as float32 1-D, None) or (None, why the cell is not one)."""
    import numpy as np

    if value is None or isinstance(value, (str, bytes)):
        return None, f"TypeError: expected a 1-D array of 16 kHz samples, got {type(value).__name__}"
    try:
        clip = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as e:
        return None, f"TypeError: expected a 1-D array of 16 kHz samples ({e})"
    if clip.ndim != 1 or clip.size == 0:
        return None, f"ValueError: expected a 1-D array of samples, not empty, got shape {list(clip.shape)}"
    if not np.isfinite(clip).all():
        return None, "ValueError: the clip has NaN or infinite samples"
    return clip, None


def _message(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


class ProgramBatches:
    """A Ray Data `map_batches` class (batch_format "pyarrow", or "numpy"): the program is loaded once per
    actor and shared by the actor's threads (each call runs on a Session of its own from
    the program's pool, docs/python.md "Threads"). Each batch comes back with every input
    column, plus `output_column` (a str per row; a list of str with num_return_sequences > 1;
    None for a bad row) and `error_column` (None, or "ExceptionType: message").

    verb: "translate" (encoder-decoder), "complete" (decoder-only) or "transcribe" (Whisper;
    the column holds 1-D float32 clips). generate_options: keyword arguments of the verb
    (num_beams, max_new_tokens, tgt_lang, language, ...). intra_op_threads: each Session's
    threads (tensorvm.load's num_threads)."""

    def __init__(self, program, verb: str = "translate", column: str = "text", output_column: Optional[str] = None,
                 error_column: str = "error", generate_options: Optional[dict] = None, intra_op_threads: int = 1):
        if verb not in VERBS:
            raise ValueError(f"tensorvm.ray: verb must be one of {', '.join(VERBS)}, got {verb!r}")
        self.verb = verb
        self.column = column
        self.output_column = output_column or DEFAULT_OUTPUT[verb]
        self.error_column = error_column
        self.options = dict(generate_options or {})
        self.program = load(program, num_threads=intra_op_threads)
        self.program.tokenizer  # noqa: B018 (a program without one fails here, once, not per batch)
        max_pos = self.program.meta.get("max_position_embeddings")
        self.max_tokens = int(max_pos) if max_pos and verb != "transcribe" else None
        n = self.options.get("num_return_sequences") or 1
        self.per_row = int(n) if isinstance(n, int) and n > 1 else 1

    def __call__(self, batch):
        """batch: a pyarrow Table (what map_batches hands it) or a dict of numpy arrays.
        A Table comes back as the same Table with the two columns appended, typed
        (string, or list of string), so that every block has the same schema even when
        one holds no error or no output at all (Parquet files of one job must agree)."""
        table = not isinstance(batch, dict)
        names = batch.column_names if table else list(batch)
        if self.column not in names:
            raise KeyError(f"tensorvm.ray: the batch has no column {self.column!r} (columns: {sorted(names)})")
        cells = _cells(batch.column(self.column)) if table else list(batch[self.column])
        outputs: list = [None] * len(cells)
        errors: list = [None] * len(cells)
        if self.verb == "transcribe":
            self._transcribe(cells, outputs, errors)
        else:
            self._text(cells, outputs, errors)
        if table:
            import pyarrow as pa

            out_type = pa.string() if self.per_row == 1 else pa.list_(pa.string())
            batch = batch.append_column(self.output_column, pa.array(outputs, type=out_type))
            return batch.append_column(self.error_column, pa.array(errors, type=pa.string()))
        out = dict(batch)
        out[self.output_column] = _object_column(outputs)
        out[self.error_column] = _object_column(errors)
        return out

    def _text(self, cells: list, outputs: list, errors: list) -> None:
        tok = self.program.tokenizer
        src_lang = self.options.get("src_lang") if self.verb == "translate" else None
        keep = []
        for i, value in enumerate(cells):
            errors[i] = _text_problem(value)
            if errors[i] is None:
                keep.append(i)
        rows = _per_row(lambda i: tok.encode(cells[i], src_lang=src_lang), keep, errors)
        good = []
        for i, r in zip(keep, rows):
            if errors[i] is not None:
                continue
            if not r:
                errors[i] = f"ValueError: {self.verb}: the text gives no tokens"
            elif self.max_tokens is not None and len(r) > self.max_tokens:
                errors[i] = (f"ValueError: {self.verb}: the text gives {len(r)} tokens, more than the program's "
                             f"max_position_embeddings ({self.max_tokens})")
            else:
                good.append((i, r))
        self._generate(good, outputs, errors, lambda rows: self._generate_rows(rows))

    def _generate_rows(self, rows: list) -> list:
        options = dict(self.options)
        options.pop("src_lang", None)
        if self.verb == "translate":
            tgt = options.pop("tgt_lang", None)
            if tgt is not None:
                options["forced_bos_token_id"] = self.program.tokenizer.language_id(tgt)
        return self.program._generate_rows(self.verb, rows, options, left_pad=self.verb == "complete")

    def _transcribe(self, cells: list, outputs: list, errors: list) -> None:
        good = []
        for i, value in enumerate(cells):
            clip, errors[i] = _audio_problem(value)
            if clip is not None:
                good.append((i, clip))
        self._generate(good, outputs, errors, lambda clips: self.program.transcribe(clips, **self.options))

    def _generate(self, good: list, outputs: list, errors: list, run) -> None:
        """run(list of inputs) -> per_row outputs for each, on the whole batch; when that
        fails, on each row alone, so that only the rows at fault get an error."""
        if not good:
            return
        try:
            results = run([x for _, x in good])
        except Exception:  # noqa: BLE001 (which row? run them one at a time)
            for i, x in good:
                try:
                    outputs[i] = self._group(run([x]))[0]
                except Exception as e:  # noqa: BLE001
                    errors[i] = _message(e)
            return
        for (i, _), value in zip(good, self._group(results)):
            outputs[i] = value

    def _group(self, results: list) -> list:
        if self.per_row == 1:
            return list(results)
        return [list(results[k:k + self.per_row]) for k in range(0, len(results), self.per_row)]


def _per_row(fn, indices: list, errors: list) -> list:
    """fn(i) for each index; an exception becomes that row's error (and its value None)."""
    out = []
    for i in indices:
        try:
            out.append(fn(i))
        except Exception as e:  # noqa: BLE001
            errors[i] = _message(e)
            out.append(None)
    return out


def _cells(column) -> list:
    """A pyarrow column's values: Python objects, or numpy arrays for Ray's tensor columns
    (audio clips), whose extension arrays convert themselves."""
    import pyarrow as pa

    if not isinstance(column.type, pa.ExtensionType):
        return column.to_pylist()
    out = []
    for chunk in column.chunks:
        out.extend(chunk.to_numpy(zero_copy_only=False))
    return out


def _object_column(values: list):
    import numpy as np

    col = np.empty(len(values), dtype=object)
    for k, v in enumerate(values):  # one by one: a slice assignment would unpack lists into a 2-D array
        col[k] = v
    return col


def map_batches(dataset, program, *, verb: str = "translate", column: str = "text", output_column: Optional[str] = None,
                error_column: str = "error", actors: int = 1, threads_per_actor: int = 1, intra_op_threads: int = 1,
                batch_size: int = 64, generate_options: Optional[dict] = None, max_restarts: int = 3,
                max_task_retries: int = 3, batches_class: type = None, **ray_remote_args: Any):
    """`dataset.map_batches` with ProgramBatches on a fixed pool of `actors` actors, each
    loading `program` (a directory every node can read) once and running up to
    `threads_per_actor` batches at once (each its own Session, `intra_op_threads` threads);
    an actor reserves threads_per_actor * intra_op_threads CPUs.

    Faults: an actor that dies is restarted up to `max_restarts` times, and a batch whose
    actor died is resubmitted up to `max_task_retries` times (Ray Data's default is
    unbounded for both, which loops forever on a row that kills the process every time).
    An exception raised by the class itself is not retried (Ray treats it as a user
    error): bad rows never raise, they get an error (see ProgramBatches).

    batches_class: a subclass of ProgramBatches to run instead (its constructor takes the
    same arguments), e.g. to post-process each batch."""
    import ray.data

    if actors < 1 or threads_per_actor < 1 or intra_op_threads < 1 or batch_size < 1:
        raise ValueError("tensorvm.ray.map_batches: actors, threads_per_actor, intra_op_threads and batch_size "
                         "must be at least 1")
    compute = ray.data.ActorPoolStrategy(size=actors, max_concurrent_calls_per_actor=threads_per_actor,
                                         enable_true_multi_threading=threads_per_actor > 1)
    ray_remote_args.setdefault("num_cpus", threads_per_actor * intra_op_threads)
    with warnings.catch_warnings():
        # Ray 2.60 deprecates passing actor options through **ray_remote_args but names no
        # other way to bound max_restarts / max_task_retries (its default retries forever)
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
        return dataset.map_batches(
            batches_class or ProgramBatches, batch_size=batch_size, batch_format="pyarrow", compute=compute,
            fn_constructor_kwargs=dict(program=str(program), verb=verb, column=column, output_column=output_column,
                                       error_column=error_column, generate_options=generate_options,
                                       intra_op_threads=intra_op_threads),
            max_restarts=max_restarts, max_task_retries=max_task_retries, **ray_remote_args)


def translate(dataset, program, **options):
    """map_batches(dataset, program, verb="translate", **options)."""
    return map_batches(dataset, program, verb="translate", **options)


def complete(dataset, program, **options):
    """map_batches(dataset, program, verb="complete", **options)."""
    return map_batches(dataset, program, verb="complete", **options)


def transcribe(dataset, program, column: str = "audio", **options):
    """map_batches(dataset, program, verb="transcribe", column="audio", **options)."""
    return map_batches(dataset, program, verb="transcribe", column=column, **options)
