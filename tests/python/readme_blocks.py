"""README.md's fenced code blocks, and a PATH on which `tensorvm` and `tensorvm-run`
are the entry points of the tensorvm this test imports (what pip's console scripts call)."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CHECKPOINT_PLACEHOLDER = "path/to/opus-mt-en-fr"

# The console scripts of pyproject.toml [project.scripts], as pip writes them.
_SCRIPT = """#!{python}
import sys
from {module} import {func}
sys.exit({func}())
"""


def section_blocks(heading: str) -> list[tuple[str, str]]:
    """(language, text) of each fenced block between `## heading` and the next `## `."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    body = text[start:end if end != -1 else len(text)]
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", body, re.S | re.M)]


def commands(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def console_scripts() -> dict[str, str]:
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["scripts"]


def script_dir(tmp: Path) -> Path:
    """A bin directory with pyproject's console scripts bound to this interpreter."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, target in console_scripts().items():
        module, func = target.split(":")
        path = bin_dir / name
        path.write_text(_SCRIPT.format(python=sys.executable, module=module, func=func))
        path.chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    return bin_dir


def environment(bin_dir: Path) -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    import tensorvm

    # The scripts must import the tensorvm this test imports (a development tree or the install).
    pkg_parent = str(Path(tensorvm.__file__).parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, env.get("PYTHONPATH")) if p)
    return env
