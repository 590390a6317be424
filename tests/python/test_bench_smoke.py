"""Smoke run of the side-by-side benchmark (bench/compare.py --quick), so it cannot rot.

Tiny checkpoint, one length and batch size, both searches, 1 repetition: seconds, not a
measurement. It checks what
the full run promises: every engine runs, float32 engines reproduce transformers' tokens
exactly (--strict makes the harness exit 1 otherwise), int8 engines report agreement,
and the table, the bandwidth block, the JSON and the PNG chart are all produced.
CTranslate2 and ONNX Runtime come from bench/requirements.txt (installed by .ci/setup);
without them the test skips locally and fails under CI.
"""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ["tensorvm", "tensorvm-int8", "tensorvm-w8a8", "transformers", "ctranslate2-float32", "ctranslate2-int8",
           "onnxruntime"]


def _missing():
    return [m for m in ("ctranslate2", "onnxruntime", "onnxscript", "matplotlib") if importlib.util.find_spec(m) is None]


def test_compare_quick(tmp_path):
    missing = _missing()
    if missing:
        msg = f"bench requirements not installed ({', '.join(missing)}): pip install -r bench/requirements.txt"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    out = tmp_path / "quick.json"
    # One length, batch 1 (what the bandwidth block reads), both searches: every engine's path
    # once; the sizes of --quick itself add only time.
    cmd = [sys.executable, str(ROOT / "bench" / "compare.py"), "--quick", "--strict", "--reps", "1",
           "--lengths", "8", "--batches", "1", "--engines", ",".join(ENGINES), "--cache", str(tmp_path / "cache"),
           "--out", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert r.returncode == 0, f"compare.py failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"

    report = json.loads(out.read_text())
    assert list(report["engines"]) == ENGINES
    n_cases = 1 * 1 * 2  # lengths x batches x beams
    for name, eng in report["engines"].items():
        assert eng["status"] == "ok", f"{name}: {eng.get('error')}"
        assert len(eng["cases"]) == n_cases, name
        for c in eng["cases"]:
            assert c["generate_ms"] > 0 and c["sentences_per_s"] > 0 and c["encoder_ms"] is not None, (name, c)
            assert c["speedup_vs_ref"] > 0, (name, c)  # ratio to tensorvm
            if eng["precision"] == "float32":
                assert c["parity"] == "exact", (name, c)
            else:
                assert 0 <= c["token_agreement_pct"] <= 100, (name, c)
        assert eng["peak_rss_MB"] > 0 and eng["load_s"] >= 0
    assert report["ratio_reference"] == "tensorvm"
    assert report["bandwidth"]["streaming_GBps"] > 0
    assert set(report["bandwidth_fraction"]) == set(ENGINES)
    assert report["weights"]["bytes_per_step_float32"] == 4 * report["weights"]["params_per_step"]

    # the printed table has one row per (case, engine) and the bandwidth block
    for name in ENGINES:
        assert r.stdout.count(f"  {name} ") >= n_cases, name
    assert "Memory-bandwidth limit" in r.stdout

    png = Path(report["chart"])
    assert png == out.with_suffix(".png")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    import matplotlib.image

    h, w = matplotlib.image.imread(png).shape[:2]
    assert w >= 800 and h >= 800
    assert not list(tmp_path.glob("*.tmp*")), "a temporary file was left behind"
