"""Smoke run of bench/speculative_bench.py --quick --strict, so it cannot rot: two held-out
inputs per task, one repetition, on the committed trained fixtures (seconds, not a
measurement). Every row is tokens-exact with transformers' greedy (--strict), the
transformers rows measure acceptance, and a tensorvm method this build lacks is a row
saying so."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("transformers")


def test_speculative_bench_quick(tmp_path):
    out, md = tmp_path / "quick.json", tmp_path / "quick.md"
    cmd = [sys.executable, str(ROOT / "bench" / "speculative_bench.py"), "--quick", "--strict", "--out", str(out),
           "--md", str(md)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, f"speculative_bench failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    report = json.loads(out.read_text())
    assert report["cpu"] and report["threads"] == 2 and report["batch"] == 1
    assert list(report["tasks"]) == ["translation", "extraction"]
    for task, t in report["tasks"].items():
        assert t["status"] == "ok", task
        rows = t["rows"]
        assert t["inputs"] == 2
        for name, row in rows.items():
            if row["status"] == "unavailable":
                assert name.startswith("tensorvm") and name != "tensorvm greedy" and row["error"], (task, name)
                continue
            assert row["status"] == "ok", (task, name)
            assert row["exact"] and row["tokens_per_s"] > 0 and len(row["seconds"]) == 1, (task, name)
            if not name.endswith("greedy"):
                assert row["vs_greedy"] > 0, (task, name)
        assert rows["transformers greedy"]["tokens_per_pass"] == 1.0
        assert 0 <= rows["transformers prompt lookup"]["acceptance"] <= 1, task
        assert rows["tensorvm greedy"]["status"] == "ok", task
    assert 0 < report["tasks"]["translation"]["rows"]["transformers draft"]["acceptance"] <= 1
    assert "tokens/s" in md.read_text()
