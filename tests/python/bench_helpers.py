"""What the smoke runs of the side-by-side benchmarks share: skip without CTranslate2
(fail under CI), run the script's --quick --strict into a temporary cache."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ["tensorvm", "tensorvm-int8", "tensorvm-w8a8", "transformers", "ctranslate2-float32", "ctranslate2-int8"]


def run_quick(script: str, tmp_path: Path) -> tuple[str, Path, Path]:
    """bench/<script> --quick --strict; its stdout, JSON report and markdown paths."""
    if importlib.util.find_spec("ctranslate2") is None:
        msg = "ctranslate2 not installed: pip install -r bench/requirements.txt"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    out, md = tmp_path / "quick.json", tmp_path / "quick.md"
    cmd = [sys.executable, str(ROOT / "bench" / script), "--quick", "--strict", "--cache", str(tmp_path / "cache"),
           "--out", str(out), "--md", str(md)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert r.returncode == 0, f"{script} failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r.stdout, out, md
