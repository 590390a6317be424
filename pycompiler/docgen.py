"""Writes docs/ops.md from the op registry, so the op reference cannot drift from the code.

    python -m tensorvm.pycompiler.docgen            # rewrite docs/ops.md
    python -m tensorvm.pycompiler.docgen --check    # exit 1 if docs/ops.md is stale
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Optional, Sequence

from . import registry

HEADER = """# Op reference

<!-- Generated from the op registry by `python -m tensorvm.pycompiler.docgen`; do not edit. -->

Every instruction of the IR is a call of one of these ops (besides the builtins
`param`, `while_loop`, `cond` and `emit`, see [ir.md](ir.md)). Parameter kinds:
`Tensor`, `Tensor?` (a tensor or None), `Tensor|scalar`, `int`, `int?`, `float` (an
int is widened), `bool`, `str`, `ints` (an int list; a single int is a one-item list),
`ints?`, `Object`, `Any`. `*name` takes the remaining positional arguments; the
parameters after it are passed by keyword. Output `Any` depends on the arguments
(a tensor if any argument is one, else a scalar).
"""


def _anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9 _-]", "", text.lower()).replace(" ", "-")


def render(specs) -> str:
    groups: dict[str, list] = {}
    for s in specs:
        groups.setdefault(s.group, []).append(s)
    out = [HEADER]
    out.append(f"{len(specs)} ops in {len(groups)} groups.\n")
    for g, ops in groups.items():
        names = ", ".join(f"[`{s.name}`](#{_anchor(s.name)})" for s in ops)
        out.append(f"- **{g}**: {names}")
    out.append("")
    for g, ops in groups.items():
        out.append(f"## {g}\n")
        for s in ops:
            out.append(f"### {s.name}\n")
            out.append(f"```\n{s.signature_text}\n```\n")
            if s.doc:
                out.append(s.doc.strip() + "\n")
    return "\n".join(out).rstrip("\n") + "\n"


def default_path() -> Path:
    # The source tree when running from it (dev builds link pycompiler/ into the package),
    # else the working directory (an installed package has no docs/ of its own).
    for root in (Path(__file__).resolve().parent.parent, Path.cwd()):
        if (root / "docs" / "ir.md").is_file():
            return root / "docs" / "ops.md"
    raise FileNotFoundError("cannot find the repository's docs/ (run from the repository root or pass --output PATH)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tensorvm.pycompiler.docgen", description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if the file differs from what would be written")
    p.add_argument("--output", help="where docs/ops.md is (default: the repository's)")
    args = p.parse_args(argv)
    path = Path(args.output) if args.output else default_path()
    # The runtime's own ops only: an app's (tensorvm.register_op) are not part of the instruction set.
    text = render([s for s in registry.real_ops().values() if s.builtin])
    current = path.read_text(encoding="utf-8") if path.is_file() else None
    if args.check:
        if current != text:
            print(f"{path} is stale: run `python -m tensorvm.pycompiler.docgen` and commit the result", file=sys.stderr)
            return 1
        return 0
    if current != text:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
