"""NLLB-200-distilled-600M-shaped translation, beam 4, batch 8: tensorvm (f32, int8,
w8a8) against transformers and CTranslate2 (float32, int8) on the same seeded
random-weight checkpoint and sources, tokens checked against transformers.

    python3 bench/nllb_bench.py --threads 2 --out nllb.json --md nllb.md
    python3 bench/nllb_bench.py --quick --strict        # smoke run: a toy M2M100, seconds

The checkpoint is an M2M100ForConditionalGeneration with NLLB-200-distilled-600M's
config (d_model 1024, 12 + 12 layers, 16 heads, ffn 4096, vocab 256206, relu, scaled
embeddings, 1024 positions, bos 0 / pad 1 / eos 2, decoder start 2), built with
transformers from seeded random weights, saved with save_pretrained under
$TENSORVM_BENCH_CACHE (default bench/.cache) and loaded by every engine through its
own path (from_pretrained, import_hf, CTranslate2's TransformersConverter).

Weights: tests/fixtures/random_checkpoints.py's `_randomize` (matrices N(0, 2.5^2 /
fan_in), norms 1 + N(0, 0.1), biases N(0, 0.1)), then the shared embedding scaled to
N(0, 1 / d_model), fairseq's initialisation: NLLB multiplies it by sqrt(d_model), so an
N(0, 1) embedding would put 32x the blocks' output in the residual stream and, through
the tied output projection, every step would repeat the previous token. EOS is banned
until --new-tokens (48) tokens (min_new_tokens = max_new_tokens), so every engine does
the same work; the target language (fra_Latn, 256057) is forced_bos_token_id.

Sources: 8 sentences of 9 to 64 tokens, NllbTokenizer's layout ([eng_Latn] tokens
[</s>]), seeded ordinary ids, right-padded with pad 1. Per engine, in a fresh process of
its own, one engine at a time (the 600M model is 2.4 GB of float32):

* encoder ms: median of the encoder alone on the batch (CTranslate2: encoder plus one
  decoder step, its Translator has no encoder-only call: an upper bound, marked *);
* total ms: median of one generate call on the batch (encoder, beam search, everything);
* sentences/s = 8 / total; peak RSS = VmHWM of the worker (imports, model, every run);
* x CT2: CTranslate2's total / this engine's, float32 rows against ctranslate2-float32,
  int8 and w8a8 rows against ctranslate2-int8.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import checkpoint as bench_checkpoint  # noqa: E402
from bench import decoder_only_models  # noqa: E402
from bench import processes  # noqa: E402
from bench.decoder_only_bench import agreement, write_reports  # noqa: E402
from bench.engines import nllb as engines  # noqa: E402

ENGINES = list(engines.ENGINES)
CT2_OF = {"float32": "ctranslate2-float32", "int8": "ctranslate2-int8", "w8a8": "ctranslate2-int8"}
SPECIAL = dict(bos_token_id=0, pad_token_id=1, eos_token_id=2, decoder_start_token_id=2)
# NLLB-200-distilled-600M's config.json (model_type m2m_100)
NLLB_600M = dict(vocab_size=256206, d_model=1024, encoder_layers=12, decoder_layers=12, encoder_attention_heads=16,
                 decoder_attention_heads=16, encoder_ffn_dim=4096, decoder_ffn_dim=4096, max_position_embeddings=1024,
                 activation_function="relu", scale_embedding=True, **SPECIAL)
MODELS = {
    "nllb-600m": ("M2M100ForConditionalGeneration", "M2M100Config", NLLB_600M, SPECIAL),
    "nllb-tiny": ("M2M100ForConditionalGeneration", "M2M100Config",
                  {**NLLB_600M, "vocab_size": 1206, "d_model": 64, "encoder_layers": 2, "decoder_layers": 2,
                   "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 128,
                   "decoder_ffn_dim": 128, "max_position_embeddings": 128}, SPECIAL),
}
VERSION = 1
# NllbTokenizer: 256000 sentencepiece ids after 4 specials... then the 202 language codes from 256001
LANGS = {"nllb-600m": (256047, 256057), "nllb-tiny": (1001, 1011)}  # (eng_Latn, fra_Latn)
LENGTHS = [9, 14, 20, 27, 33, 41, 52, 64]
FULL = dict(model="nllb-600m", beams=4, new_tokens=48, reps=3, rounds=1)
QUICK = dict(model="nllb-tiny", beams=4, new_tokens=12, reps=2, rounds=1)


def fairseq_embedding(model) -> None:
    import torch

    with torch.no_grad():
        model.model.shared.weight.mul_(model.config.d_model ** -0.5)


def ensure_checkpoint(name: str, cache_root: Path) -> Path:
    return decoder_only_models.ensure(name, cache_root, models=MODELS, version=VERSION, adjust=fairseq_embedding)


def sources(model: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """[eng_Latn] + ordinary ids + [</s>], right-padded with pad 1."""
    src_lang, _ = LANGS[model]
    rng = np.random.default_rng(seed)
    ids = np.full((len(LENGTHS), max(LENGTHS)), SPECIAL["pad_token_id"], np.int64)
    for row, n in zip(ids, LENGTHS):
        row[:n] = [src_lang, *rng.integers(4, LANGS[model][0] - 200, size=n - 2), SPECIAL["eos_token_id"]]
    return ids, (ids != SPECIAL["pad_token_id"]).astype(np.int64)


# --------------------------------------------------------------------------- subprocesses


def run_prepare(model: str, names: list[str], cache_root: Path, out: Path) -> None:
    """Builds the checkpoint (once) and every engine's converted model, in one process."""
    processes.prepare(ensure_checkpoint(model, cache_root), names, engines.make, cache_root, out)


def run_worker(name: str, model: str, checkpoint_dir: Path, cache_dir: Path, threads: int, beams: int,
               new_tokens: int, reps: int, out: Path) -> None:
    def measure(eng, res):
        ids, mask = sources(model)
        lang = LANGS[model][1]
        tokens = eng.generate(ids, mask, lang, beams, new_tokens)  # warm-up, and the tokens compared
        if tokens.shape != (ids.shape[0], new_tokens):
            raise RuntimeError(f"{name} made {tokens.shape}, asked for {(ids.shape[0], new_tokens)}")
        enc, tot, stable = [], [], True
        gc.disable()
        for _ in range(reps):
            t0 = time.perf_counter()
            eng.encode(ids, mask)
            enc.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            again = eng.generate(ids, mask, lang, beams, new_tokens)
            tot.append(time.perf_counter() - t0)
            stable &= bool(np.array_equal(again, tokens))
        gc.enable()
        res.update(status="ok", tokens=tokens.tolist(), encode_s=enc, total_s=tot, deterministic=stable,
                   info=eng.info())

    processes.worker(name, engines.make, checkpoint_dir, cache_dir, threads, measure, out)


def _sub(args: list[str], timeout: float) -> dict:
    return processes.run_task(Path(__file__).resolve(), args, timeout)


# --------------------------------------------------------------------------- report


def summarize(rows: dict, batch: int) -> None:
    for r in rows.values():
        if r["status"] == "ok":
            r["encoder_ms"] = 1000 * float(np.median(r["encode_s"]))
            r["total_ms"] = 1000 * float(np.median(r["total_s"]))
            r["sentences_per_s"] = batch / (r["total_ms"] / 1000)
    ref = rows.get(engines.REFERENCE)
    for name, r in rows.items():
        if r["status"] != "ok":
            continue
        if ref and ref["status"] == "ok":
            a = agreement(np.ravel(r["tokens"]).tolist(), np.ravel(ref["tokens"]).tolist())
            a["sentences_equal"] = int(sum(x == y for x, y in zip(r["tokens"], ref["tokens"])))
            r["vs_transformers"] = a
        ct2 = rows.get(CT2_OF[r["precision"]])
        if ct2 and ct2["status"] == "ok" and name != ct2["engine"]:
            r["ct2_reference"] = ct2["engine"]
            r["total_vs_ct2"] = ct2["total_ms"] / r["total_ms"]
            r["encoder_vs_ct2"] = ct2["encoder_ms"] / r["encoder_ms"]


def agreement_text(r: dict, batch: int) -> str:
    a = r.get("vs_transformers")
    if r["engine"] == engines.REFERENCE:
        return "reference"
    if a is None:
        return "-"
    if a["exact"]:
        return "exact"
    text = f"{a['sentences_equal']}/{batch} sentences, {a['agreement_pct']:.0f}% of tokens"
    return f"MISMATCH {text}" if r["precision"] == "float32" else text


def table(rows: dict, batch: int) -> list[str]:
    lines = ["| engine | precision | encoder ms | total ms | sentences/s | peak RSS MB | total x CT2 | encoder x CT2 "
             "| tokens vs transformers |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        if r["status"] != "ok":
            lines.append(f"| {name} | {r.get('precision', '?')} | {r['status']}: {r.get('error', '')[:120]} "
                         "| | | | | | |")
            continue
        star = "*" if name.startswith("ctranslate2") else ""
        ratio = f"{r['total_vs_ct2']:.2f}x" if "total_vs_ct2" in r else "-"
        eratio = f"{r['encoder_vs_ct2']:.2f}x" if "encoder_vs_ct2" in r else "-"
        lines.append(f"| {name} | {r['precision']} | {r['encoder_ms']:.0f}{star} | {r['total_ms']:.0f} | "
                     f"{r['sentences_per_s']:.2f} | {r['peak_rss_MB']:.0f} | {ratio} | {eratio} | "
                     f"{agreement_text(r, batch)} |")
    return lines


def variety(tokens: list[list[int]]) -> str:
    """How varied the reference translations are (random weights can repeat one token)."""
    distinct = [len(set(row)) for row in tokens]
    return f"distinct tokens per sentence {min(distinct)}-{max(distinct)} of {len(tokens[0])}"


# --------------------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a toy M2M100 (nllb-tiny), seconds: the smoke test")
    ap.add_argument("--model", choices=sorted(MODELS), help="default nllb-600m (--quick: nllb-tiny)")
    ap.add_argument("--engines", default=",".join(ENGINES), help="comma list of " + ", ".join(ENGINES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--beams", type=int)
    ap.add_argument("--new-tokens", type=int, help="tokens per sentence, the target language first")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--cache", help="checkpoint and converted models ($TENSORVM_BENCH_CACHE or bench/.cache)")
    ap.add_argument("--out", help="JSON report")
    ap.add_argument("--md", help="markdown table")
    ap.add_argument("--strict", action="store_true", help="exit 1 on an engine error or a float32 token mismatch")
    ap.add_argument("--prepare-only", action="store_true", help="build and convert, then stop (no timing)")
    ap.add_argument("--timeout", type=float, default=7200, help="seconds per subprocess")
    ap.add_argument("--task", choices=["prepare", "run"], help=argparse.SUPPRESS)
    ap.add_argument("--engine", help=argparse.SUPPRESS)
    ap.add_argument("--checkpoint", help=argparse.SUPPRESS)
    ap.add_argument("--engine-cache", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    preset = QUICK if args.quick else FULL
    for k in ("model", "beams", "new_tokens", "reps", "rounds"):
        if getattr(args, k) is None:
            setattr(args, k, preset[k])

    if args.task == "prepare":
        run_prepare(args.model, args.engine.split(","), Path(args.engine_cache), Path(args.result))
        return 0
    if args.task == "run":
        run_worker(args.engine, args.model, Path(args.checkpoint), Path(args.engine_cache), args.threads, args.beams,
                   args.new_tokens, args.reps, Path(args.result))
        return 0

    names = [e for e in args.engines.split(",") if e]
    env = processes.start(args.threads, names, engines.make)
    root = bench_checkpoint.cache_root(args.cache)
    t0 = time.perf_counter()
    prep = _sub(["--task", "prepare", "--model", args.model, "--engine", ",".join(names),
                 "--engine-cache", str(root)], args.timeout)
    if prep["status"] != "ok":
        print(f"{args.model}: could not build the checkpoint: {prep['error']}", file=sys.stderr)
        return 1
    print(f"  {args.model}: checkpoint and conversions ready ({time.perf_counter() - t0:.1f} s): {prep['engines']}",
          flush=True)
    if args.prepare_only:
        return 0
    ckpt, eng_cache, prepared = Path(prep["checkpoint"]), Path(prep["engine_cache"]), prep["engines"]
    batch = len(LENGTHS)
    rows = {e: {"engine": e, "status": prepared[e]["status"], "error": prepared[e].get("error", ""),
                "prepare": prepared[e], "rounds": [], "encode_s": [], "total_s": []} for e in names}
    loads = [os.getloadavg()[0]]
    for rnd in range(args.rounds):
        for e in names:
            r = rows[e]
            if r["status"] != "ok":
                continue
            la = os.getloadavg()
            res = _sub(["--task", "run", "--engine", e, "--model", args.model, "--checkpoint", str(ckpt),
                        "--engine-cache", str(eng_cache), "--threads", str(args.threads), "--beams", str(args.beams),
                        "--new-tokens", str(args.new_tokens), "--reps", str(args.reps)], args.timeout)
            loads.append(os.getloadavg()[0])
            res["loadavg_before"] = la
            r["rounds"].append({k: v for k, v in res.items() if k != "tokens"})
            if res["status"] != "ok":
                r.update(status=res["status"], error=res.get("error", ""))
                print(f"  {e}: {res['status']}: {res.get('error', '')}", file=sys.stderr, flush=True)
                continue
            deterministic = res["deterministic"] and r.get("tokens", res["tokens"]) == res["tokens"]
            r["deterministic"] = r.get("deterministic", True) and deterministic
            r.update(precision=res["precision"], tokens=res["tokens"], info=res.get("info", {}),
                     load_s=res["load_s"], rss_imports_MB=res["rss_imports_MB"])
            r["encode_s"] += res["encode_s"]
            r["total_s"] += res["total_s"]
            r["peak_rss_MB"] = max(r.get("peak_rss_MB", 0), res["peak_rss_MB"])
            print(f"  round {rnd + 1} {e}: encoder {1000 * np.median(res['encode_s']):.0f} ms, total "
                  f"{1000 * np.median(res['total_s']):.0f} ms, peak {res['peak_rss_MB']:.0f} MB, load {la[0]:.2f}",
                  flush=True)
    summarize(rows, batch)
    ref = rows.get(engines.REFERENCE, {})
    header = (f"**{args.model}** ({decoder_only_models.weight_bytes(ckpt) / 2**20:.0f} MB of float32 weights), batch "
              f"{batch} (sources of {LENGTHS[0]}-{LENGTHS[-1]} tokens), beam {args.beams}, {args.new_tokens} tokens "
              f"per sentence, {args.threads} threads; medians of {args.reps} x {args.rounds} round(s); load average "
              f"{loads[0]:.1f} at the start, {max(loads):.1f} at most between engines"
              + (f"; transformers' outputs: {variety(ref['tokens'])}" if ref.get("status") == "ok" else "") + ".")
    lines = [f"CPU: {env['cpu']}; tensorvm kernels {env['tensorvm_kernels'].get('active', '?')}, GEMM "
             f"{env['tensorvm_kernels'].get('gemm', '?')}; commit {env['git_commit']}; {env['date']}.", "",
             header, "", *table(rows, batch), "",
             "`*` CTranslate2's Translator has no encoder-only call: encoder + one decoder step."]
    print("\n" + "\n".join(lines), flush=True)
    report = {"environment": env | {"loadavg_end": os.getloadavg()}, "model": args.model, "checkpoint": str(ckpt),
              "settings": {k: getattr(args, k) for k in ("threads", "beams", "new_tokens", "reps", "rounds")},
              "lengths": LENGTHS, "rows": rows}
    write_reports(args, report, lines)
    failed = False
    for name, r in rows.items():
        if r["status"] == "error":
            failed = True
        elif r["status"] == "ok" and r["precision"] == "float32" and not r.get("vs_transformers", {"exact": True})["exact"]:
            print(f"!! {name} float32 tokens differ from transformers", file=sys.stderr)
            failed = True
        elif r["status"] == "ok" and not r.get("deterministic", True):
            print(f"!! {name} gave different tokens from run to run", file=sys.stderr)
            failed = True
    return 1 if (failed and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
