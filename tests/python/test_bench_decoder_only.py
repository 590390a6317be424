"""Smoke run of the decoder-only benchmark (bench/decoder_only_bench.py --quick), so it cannot rot.

Toy GPT-2 and Qwen2 shapes, 2 repetitions: seconds, not a measurement. It checks what the
full run promises: every engine runs in its own process and reports prefill, ms/token and
peak RSS, the float32 engines reproduce transformers' tokens exactly (--strict exits 1
otherwise), int8 / w8a8 report agreement, and ratios against CTranslate2 at each precision.
CTranslate2 comes from bench/requirements.txt: without it the test skips locally and
fails under CI.
"""
import json

from bench_helpers import ENGINES, run_quick


def test_decoder_only_quick(tmp_path):
    stdout, out, md = run_quick("decoder_only_bench.py", tmp_path)

    report = json.loads(out.read_text())
    assert list(report["models"]) == ["gpt2-tiny", "qwen2-tiny"]
    settings = report["settings"]
    for model, m in report["models"].items():
        rows = m["rows"]
        assert list(rows) == ENGINES
        for name, row in rows.items():
            assert row["status"] == "ok", (model, name, row.get("error"))
            assert len(row["tokens"]) == 1 + settings["new_tokens"], (model, name)
            assert len(row["first_s"]) == len(row["all_s"]) == settings["reps"] * settings["rounds"]
            assert row["prefill_ms"] > 0 and row["peak_rss_MB"] > 0, (model, name)
            assert row["deterministic"], (model, name)
            if name != "transformers":
                agree = row["vs_transformers"]
                assert 0 <= agree["agreement_pct"] <= 100
                if row["precision"] == "float32":
                    assert agree["exact"], (model, name, agree)
            if not name.startswith("ctranslate2"):  # each precision against CTranslate2's
                want = "ctranslate2-float32" if row["precision"] == "float32" else "ctranslate2-int8"
                assert row["ct2_reference"] == want and row["prefill_vs_ct2"] > 0, (model, name)
        # the printed and written table: one row per engine
        for name in ENGINES:
            assert f"| {name} |" in stdout
    text = md.read_text()
    assert text.count("| tensorvm-w8a8 | w8a8 |") == 2
    assert not list(tmp_path.glob("*.tmp")), "a temporary file was left behind"
