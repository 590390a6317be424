"""bench/quantization_quality.py on a tiny budget: it imports the committed trained model
(tests/fixtures/data/quality-lm) at every scheme this build has and measures it against
f32 on held-out text. The bounds are generous ones on that committed model's measured
figures (docs/quantization.md), not on anything learned here: tests never train."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# measured on 64 windows (docs/quantization.md) -> the bound on 3 windows
MIN_AGREEMENT = {"int8": 0.95, "w8a8": 0.95, "f16": 0.99, "bf16": 0.95, "int4 G=32": 0.8, "w4a8 G=32": 0.8}
MAX_DLL = {"int8": 0.02, "w8a8": 0.02, "f16": 0.002, "bf16": 0.02, "int4 G=32": 0.2, "w4a8 G=32": 0.2}


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("quantization_quality", ROOT / "bench" / "quantization_quality.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path_factory.mktemp("quality") / "rows.json"
    assert mod.main(["--windows", "3", "--prompts", "2", "--new-tokens", "8", "--json", str(out),
                     "--only", *MIN_AGREEMENT]) == 0
    return {r["scheme"]: r for r in json.loads(out.read_text())}


def test_f32_has_learned_the_text(rows):
    # a uniform guess over the 1024 tokens is -6.93 nats; the committed model's held-out loss is 3.71
    assert -4.5 < rows["f32"]["ll"] < -3.0


def test_every_scheme_stays_close_to_f32(rows):
    measured = [s for s in rows if s != "f32"]
    assert "int8" in measured and "w8a8" in measured
    for s in measured:
        assert rows[s]["agree"] >= MIN_AGREEMENT[s], (s, rows[s])
        assert abs(rows[s]["dll"]) <= MAX_DLL[s], (s, rows[s])
        assert rows[s]["mib"] < rows["f32"]["mib"]
