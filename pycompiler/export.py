"""Export: a traced ProgramBuilder written as a program directory (program_dir.py)."""
from __future__ import annotations

from pathlib import Path

from .ir_check import check
from .modes import as_array
from .program_dir import write_program_dir


def export(builder, path, transform=None) -> Path:
    """Traces what is left, checks the text, and writes the builder's program directory.
    `transform(text, weights) -> (text, weights)` runs on the program before it is written
    (import_hf: the graph passes, passes.optimize_program)."""
    text = builder.text()
    check(text)  # the printer's output must be valid IR; a failure here is a tensorvm bug
    weights = {n: as_array(builder.weights[n]) for n in builder.used_weights()}
    if transform is not None:
        text, weights = transform(text, weights)
        check(text)
    return write_program_dir(path, text, weights, builder.meta, getattr(builder, "extra_files", None))
