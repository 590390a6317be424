"""Smoke run of the Whisper benchmark against whisper.cpp and faster-whisper
(bench/whisper_cpp_bench.py --quick --strict), so it cannot rot.

A toy Whisper (64 wide, 2 + 2 layers, Whisper's vocabulary), 30 s and 60 s of espeak-ng speech,
8 tokens per window, one pass: not a measurement. Skipped when pywhispercpp, faster-whisper
(bench/requirements.txt) or espeak-ng are missing. whisper.cpp's rows need its source and
whisper-quantize (bash bench/whisper_cpp_build.sh); without them they are "unavailable".
"""
import importlib.util
import json
import shutil
import subprocess
import sys

import pytest
from bench_helpers import ROOT


def test_whisper_cpp_quick(tmp_path):
    for module in ("pywhispercpp", "faster_whisper", "ctranslate2"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} not installed: pip install -r bench/requirements.txt")
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng not installed (apt-get install espeak-ng): the benchmark's speech")
    out, md = tmp_path / "quick.json", tmp_path / "quick.md"
    cmd = [sys.executable, str(ROOT / "bench" / "whisper_cpp_bench.py"), "--quick", "--strict",
           "--cache", str(tmp_path / "cache"), "--out", str(out), "--md", str(md)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert r.returncode == 0, f"whisper_cpp_bench failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"

    report = json.loads(out.read_text())
    rows = report["shapes"]["toy"]
    n, seconds = report["settings"]["new_tokens"], report["settings"]["seconds"]
    assert seconds == [30, 60]
    for name, row in rows.items():
        if name.startswith("whisper.cpp") and row["status"] in ("unavailable", "unsupported"):
            continue  # no whisper.cpp source / whisper-quantize here; f32 ggml cannot run on the CPU
        assert row["status"] == "ok", (name, row.get("error"))
        assert row["file_MB"] > 0 and row["peak_rss_MB"] > 0 and row["load_s"] >= 0, name
        for s in seconds:
            windows = row[str(s)]["tokens"]
            assert len(windows) == s // 30, name  # 60 s: two 30-s windows
            assert row[str(s)]["median_s"] > 0, name
            if not name.startswith("whisper.cpp"):  # whisper.cpp cannot ban EOS: it may stop earlier
                assert all(len(w) == n for w in windows), (name, windows)
        assert "vs_tensorvm_f32" in row, name
    assert rows["tensorvm-f32"]["vs_tensorvm_f32"]["exact"]
    assert "x faster-whisper" in md.read_text() and "| tensorvm-w8a8 |" in md.read_text()
    assert rows["tensorvm-f32"]["ratios"]["faster-whisper"][0] > 0
