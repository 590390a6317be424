"""Export: a traced ProgramBuilder written as a program directory (program_dir.py)."""
from __future__ import annotations

from pathlib import Path

from .ir_check import check
from .modes import as_array
from .program_dir import write_program_dir


def export(builder, path, optimize: bool = False) -> Path:
    """Traces what is left, checks the text, and writes the builder's program directory;
    with `optimize`, after the graph passes' default pipeline (passes.default_passes),
    which may merge weights: the program's weights are then the ones it reads."""
    text = builder.text()
    check(text)  # the printer's output must be valid IR; a failure here is a tensorvm bug
    weights = {n: as_array(builder.weights[n]) for n in builder.used_weights()}
    if optimize:
        from .passes import default_passes, optimize as run_passes, weights_read
        from .replay import check as parse

        module = run_passes(parse(text), default_passes(weights))[0]
        text = str(module)
        check(text)
        weights = {n: weights[n] for n in weights_read(module, weights)}
    return write_program_dir(path, text, weights, builder.meta, getattr(builder, "extra_files", None))
