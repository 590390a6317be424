"""Export: a traced ProgramBuilder written as a program directory (program_dir.py)."""
from __future__ import annotations

from pathlib import Path

from .ir_check import check
from .modes import as_array
from .program_dir import write_program_dir


def export(builder, path, optimize: bool = False) -> Path:
    """Traces what is left, checks the text, and writes the builder's program directory;
    with `optimize`, after the graph passes' default pipeline (passes/__init__.py)."""
    text = builder.text()
    check(text)  # the printer's output must be valid IR; a failure here is a tensorvm bug
    if optimize:
        from .passes import optimize as run_passes
        from .replay import check as parse

        text = str(run_passes(parse(text))[0])
        check(text)
    names = builder.used_weights()
    weights = {n: as_array(builder.weights[n]) for n in names}
    return write_program_dir(path, text, weights, builder.meta, getattr(builder, "extra_files", None))
