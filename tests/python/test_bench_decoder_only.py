"""Smoke run of the decoder-only benchmark (bench/decoder_only_bench.py --quick), so it cannot rot.

Toy GPT-2 and Qwen2 shapes, 2 repetitions: seconds, not a measurement. It checks what the
full run promises: every engine runs in its own process and reports prefill, ms/token, file
size and peak RSS, the float32 engines reproduce transformers' tokens exactly (--strict exits
1 otherwise; llama.cpp's f32 included, through its own greedy run), quantized engines report
agreement, ratios against CTranslate2 at each precision and issue 29's targets against
llama.cpp. CTranslate2 comes from bench/requirements.txt: without it the test skips locally
and fails under CI. llama.cpp's binaries are optional (CI has none): without them its rows
are "unavailable"; so are tensorvm's schemes that the build does not have yet.
"""
import json
import sys

from bench_helpers import ROOT, run_quick

sys.path.insert(0, str(ROOT))
from bench.decoder_only_bench import ENGINES, LLAMA_OF  # noqa: E402

# rows that may be "unavailable": llama.cpp without binaries, tensorvm schemes not built yet
OPTIONAL = {e for e in ENGINES if e.startswith("llama.cpp-")} | {"tensorvm-int4", "tensorvm-w4a8", "tensorvm-f16",
                                                                  "tensorvm-bf16"}


def test_decoder_only_quick(tmp_path):
    stdout, out, md = run_quick("decoder_only_bench.py", tmp_path)

    report = json.loads(out.read_text())
    assert list(report["models"]) == ["gpt2-tiny", "qwen2-tiny"]
    settings = report["settings"]
    for model, m in report["models"].items():
        rows = m["rows"]
        assert list(rows) == ENGINES
        for name, row in rows.items():
            if name in OPTIONAL and row["status"] == "unavailable":
                assert row["error"], (model, name)
                continue
            assert row["status"] == "ok", (model, name, row.get("error"))
            assert len(row["tokens"]) == 1 + settings["new_tokens"], (model, name)
            assert len(row["first_s"]) == settings["reps"] * settings["rounds"], (model, name)
            if name.startswith("llama.cpp-"):  # llama-bench's samples: prefill, then decode per token
                assert len(row["decode_s"]) == settings["reps"] * settings["rounds"], (model, name)
            else:
                assert len(row["all_s"]) == settings["reps"] * settings["rounds"], (model, name)
            assert row["prefill_ms"] > 0 and row["peak_rss_MB"] > 0 and row["file_MB"] > 0, (model, name)
            assert row["step_bytes"] > 0, (model, name)
            assert row["deterministic"], (model, name)
            if name != "transformers":
                agree = row["vs_transformers"]
                assert 0 <= agree["agreement_pct"] <= 100
                if row["precision"] == "float32":
                    assert agree["exact"], (model, name, agree)
            if name.startswith("tensorvm"):  # each precision against CTranslate2's
                want = "ctranslate2-float32" if row["precision"] in ("float32", "f16", "bf16") else "ctranslate2-int8"
                if row["precision"] in ("float32", "int8", "w8a8", "int4", "w4a8"):
                    assert row["ct2_reference"] == want and row["prefill_vs_ct2"] > 0, (model, name)
                other = rows[LLAMA_OF[name]]
                if other["status"] == "ok":  # issue 29's pair
                    assert row["vs_llama_cpp"]["engine"] == LLAMA_OF[name], (model, name)
                    assert row["vs_llama_cpp"]["size"] > 0, (model, name)
        # the printed and written table: one row per engine
        for name in ENGINES:
            assert f"| {name} |" in stdout
    text = md.read_text()
    assert text.count("| tensorvm-w8a8 | w8a8 |") == 2
    assert not list(tmp_path.glob("*.tmp")), "a temporary file was left behind"
