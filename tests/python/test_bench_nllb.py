"""Smoke run of the NLLB benchmark (bench/nllb_bench.py --quick), so it cannot rot.

A toy M2M100 with NLLB's special ids and layout, batch 8, beam 4: seconds, not a
measurement. It checks what the full run promises: every engine in its own process with
encoder ms, total ms, sentences/s and peak RSS, the float32 engines token-exact with
transformers (--strict exits 1 otherwise), int8 / w8a8 agreement reported, ratios against
CTranslate2 at each precision. CTranslate2 comes from bench/requirements.txt: without it the
test skips locally and fails under CI.
"""
import json

from bench_helpers import ENGINES, run_quick


def test_nllb_quick(tmp_path):
    stdout, out, md = run_quick("nllb_bench.py", tmp_path)

    report = json.loads(out.read_text())
    assert report["model"] == "nllb-tiny"
    settings, batch = report["settings"], len(report["lengths"])
    rows = report["rows"]
    assert list(rows) == ENGINES
    for name, row in rows.items():
        assert row["status"] == "ok", (name, row.get("error"))
        assert len(row["tokens"]) == batch and all(len(t) == settings["new_tokens"] for t in row["tokens"]), name
        assert len(row["encode_s"]) == len(row["total_s"]) == settings["reps"] * settings["rounds"]
        assert row["total_ms"] > 0 and row["sentences_per_s"] > 0 and row["peak_rss_MB"] > 0, name
        assert row["deterministic"], name
        if name != "transformers":
            agree = row["vs_transformers"]
            assert 0 <= agree["sentences_equal"] <= batch
            if row["precision"] == "float32":
                assert agree["exact"], (name, agree)
        if not name.startswith("ctranslate2"):
            want = "ctranslate2-float32" if row["precision"] == "float32" else "ctranslate2-int8"
            assert row["ct2_reference"] == want and row["total_vs_ct2"] > 0, name
    assert all(t[0] == 1011 for t in rows["transformers"]["tokens"])  # the forced target language first
    for name in ENGINES:
        assert f"| {name} |" in stdout
    assert md.read_text().count("| tensorvm-w8a8 | w8a8 |") == 1
    assert not list(tmp_path.glob("*.tmp")), "a temporary file was left behind"
