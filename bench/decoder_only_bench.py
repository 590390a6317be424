"""Decoder-only LMs side by side: tensorvm (f32, int8, w8a8, and int4, w4a8, f16, bf16 where
the build has them), transformers eager, CTranslate2 (float32, int8) and llama.cpp (f32, f16,
q8_0, q4_0; bench/engines/llama_cpp.py, where its binaries are) on the same seeded
random-weight checkpoint and prompt, tokens checked against transformers; issue 29's
targets against llama.cpp at each matching precision (MET / MISSED).

    python3 bench/decoder_only_bench.py --threads 2 --out results.json --md results.md
    python3 bench/decoder_only_bench.py --quick --strict          # smoke run: toy shapes, seconds

Models (bench/decoder_only_models.py): GPT-2 124M-, Qwen2.5-0.5B-, Qwen3-0.6B- and
Gemma-3-1B-shaped, built
with transformers from seeded random weights and cached under $TENSORVM_BENCH_CACHE
(default bench/.cache). Per model and engine, batch 1, one prompt of --prompt-len
tokens:

* prefill ms: median time of a generate call making 1 new token (the whole prompt in,
  the first token out: time to first token);
* ms/token: (median of generate making 1 + N tokens - median of generate making 1) / N,
  N = --new-tokens: the decode steps alone, the prefill excluded. EOS is banned until
  the last token (min_new_tokens = max_new_tokens), so every engine does the same work;
* prefill CPU ms: the median CPU time (all the process's threads) of the same generate
  call making 1 token: on a shared machine the figure waiting for a core does not
  inflate (with --threads 1 it is the work alone; with more, spinning threads count);
* peak RSS: VmHWM of the engine's own worker process (imports + model + every run).

Each engine runs in a fresh process, one after the other (--rounds times, in turn; the
repetitions of all rounds are pooled before the medians, so a drift of the machine's
speed falls on every engine alike). Conversions (tensorvm import, CTranslate2 converter)
run before, in their own processes, untimed. Agreement: the generated tokens against
transformers'; float32 engines must be token-exact (--strict exits 1 otherwise),
int8 / w8a8 engines report the fraction of equal positions.
"""
from __future__ import annotations

import argparse
import gc
import json
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
from bench import decoder_only_models as models  # noqa: E402
from bench import processes  # noqa: E402
from bench.compare import rss_mb  # noqa: E402
from bench.engines import decoder_only as engines  # noqa: E402

ENGINES = ["tensorvm", "tensorvm-int8", "tensorvm-w8a8", "tensorvm-int4", "tensorvm-w4a8", "tensorvm-f16",
           "tensorvm-bf16", "transformers", "ctranslate2-float32", "ctranslate2-int8", "llama.cpp-f32",
           "llama.cpp-f16", "llama.cpp-q8_0", "llama.cpp-q4_0"]
# which CTranslate2 row each precision's speed is compared with (none for 16 and 4 bits' llama.cpp rows)
CT2_OF = {"float32": "ctranslate2-float32", "int8": "ctranslate2-int8", "w8a8": "ctranslate2-int8",
          "int4": "ctranslate2-int8", "w4a8": "ctranslate2-int8", "q8_0": "ctranslate2-int8"}
# issue 29's pairs: tensorvm engine -> the llama.cpp engine at the matching precision
LLAMA_OF = {"tensorvm": "llama.cpp-f32", "tensorvm-f16": "llama.cpp-f16", "tensorvm-bf16": "llama.cpp-f16",
            "tensorvm-int8": "llama.cpp-q8_0", "tensorvm-w8a8": "llama.cpp-q8_0", "tensorvm-int4": "llama.cpp-q4_0",
            "tensorvm-w4a8": "llama.cpp-q4_0"}
# issue 29's targets for each pair: decode and prefill >= 1.0x, size <= 1.05x the GGUF,
# peak RSS <= size + 10%, decode >= 85% of the streaming read
TARGETS = dict(decode=1.0, prefill=1.0, size=1.05, rss=1.10, bandwidth=0.85)
FULL = dict(models=["gpt2-124m", "qwen2.5-0.5b", "tinyllama-1.1b", "qwen3-0.6b", "gemma-3-1b"], prompt_len=64,
            new_tokens=64, reps=5, rounds=2)
QUICK = dict(models=["gpt2-tiny", "qwen2-tiny"], prompt_len=16, new_tokens=8, reps=2, rounds=1)


def prompt(checkpoint_dir: Path, length: int, seed: int = 0) -> np.ndarray:
    """Seeded ordinary token ids: below the first end token where the special tokens are
    the last ids (GPT-2, Qwen), above bos and eos where they are the first (Gemma: pad 0,
    eos 1, bos 2), so the prompt holds no EOS."""
    vocab, bos, eos = engines.special_ids(checkpoint_dir)
    low, high = (0, eos) if eos > vocab // 2 else (max(eos, bos or 0) + 1, vocab)
    return np.random.default_rng(seed).integers(low, high, size=length, dtype=np.int64)


# --------------------------------------------------------------------------- subprocesses


def run_prepare(model: str, names: list[str], cache_root: Path, out: Path) -> None:
    """Builds the checkpoint (once) and every engine's converted model, in one process."""
    processes.prepare(models.ensure(model, cache_root), names, engines.make, cache_root, out)


def run_worker(name: str, checkpoint_dir: Path, cache_dir: Path, threads: int, prompt_len: int, new_tokens: int,
               reps: int, out: Path) -> None:
    def measure(eng, res):
        res["rss_loaded_MB"] = rss_mb()
        ids = prompt(checkpoint_dir, prompt_len)
        res["file_MB"] = engines.files_bytes(eng.files(checkpoint_dir, cache_dir)) / 2**20
        res["step_bytes"], res["step_bytes_exact"] = eng.step_bytes(checkpoint_dir, cache_dir)
        if getattr(eng, "external_timing", False):  # llama.cpp: its own benchmark tool, in its own process
            eng.measure(res, ids, new_tokens, reps)
            return
        tokens = eng.generate(ids, 1 + new_tokens)  # warm-up, and the tokens compared
        first = eng.generate(ids, 1)
        if tokens.shape != (1 + new_tokens,) or first.shape != (1,):
            raise RuntimeError(f"{name} made {tokens.shape[0]} and {first.shape[0]} tokens, "
                               f"asked for {1 + new_tokens} and 1")
        t_first, t_all, cpu_first, stable = [], [], [], True
        gc.disable()
        for _ in range(reps):  # interleaved, so drift hits both timings alike
            t0, c0 = time.perf_counter(), time.process_time()
            eng.generate(ids, 1)
            t_first.append(time.perf_counter() - t0)
            cpu_first.append(time.process_time() - c0)
            t0 = time.perf_counter()
            again = eng.generate(ids, 1 + new_tokens)
            t_all.append(time.perf_counter() - t0)
            stable &= bool(np.array_equal(again, tokens))
        gc.enable()
        res.update(status="ok", tokens=tokens.tolist(), first_s=t_first, all_s=t_all, first_cpu_s=cpu_first,
                   deterministic=stable,
                   info=eng.info())

    processes.worker(name, engines.make, checkpoint_dir, cache_dir, threads, measure, out)


def _sub(args: list[str], timeout: float) -> dict:
    return processes.run_task(Path(__file__).resolve(), args, timeout)


# --------------------------------------------------------------------------- report


def agreement(tokens: list[int], ref: list[int]) -> dict:
    a, b = np.asarray(tokens), np.asarray(ref)
    same = a == b
    first = int(np.argmin(same)) if not same.all() else None
    return {"exact": bool(same.all()), "agreement_pct": 100.0 * float(same.mean()), "first_difference": first}


def summarize(rows: dict, new_tokens: int) -> None:
    """Medians, ratios against CTranslate2 at the same precision, agreement with transformers."""
    for r in rows.values():
        if r["status"] == "ok":
            r["prefill_ms"] = 1000 * float(np.median(r["first_s"]))
            r["prefill_cpu_ms"] = 1000 * float(np.median(r["first_cpu_s"])) if r["first_cpu_s"] else None
            if r.get("decode_s"):  # llama-bench times the decode steps alone
                r["ms_per_token"] = 1000 * float(np.median(r["decode_s"]))
            else:
                r["ms_per_token"] = 1000 * (float(np.median(r["all_s"])) - float(np.median(r["first_s"]))) / new_tokens
    ref = rows.get(engines.REFERENCE)
    for name, r in rows.items():
        if r["status"] != "ok":
            continue
        if ref and ref["status"] == "ok":
            r["vs_transformers"] = agreement(r["tokens"], ref["tokens"])
            if r.get("tokens_flash_attn_default"):  # llama.cpp f32 as timed (flash attention in f16)
                r["vs_transformers_flash_attn_default"] = agreement(r["tokens_flash_attn_default"], ref["tokens"])
        ct2 = rows.get(CT2_OF.get(r["precision"], ""))
        if ct2 and ct2["status"] == "ok" and name != ct2["engine"]:
            r["ct2_reference"] = ct2["engine"]
            r["prefill_vs_ct2"] = ct2["prefill_ms"] / r["prefill_ms"]
            if r["prefill_cpu_ms"] and ct2["prefill_cpu_ms"]:
                r["prefill_cpu_vs_ct2"] = ct2["prefill_cpu_ms"] / r["prefill_cpu_ms"]
            if r["ms_per_token"] > 0 and ct2["ms_per_token"] > 0:  # a difference of two medians: noise can flip it
                r["decode_vs_ct2"] = ct2["ms_per_token"] / r["ms_per_token"]


def agreement_text(r: dict) -> str:
    a = r.get("vs_transformers")
    if r["engine"] == engines.REFERENCE:
        return "reference"
    if a is None:
        return "-"
    if a["exact"]:
        text = "exact"
    else:
        text = f"{a['agreement_pct']:.0f}% (from token {a['first_difference']})"
        text = f"MISMATCH {text}" if r["precision"] == "float32" else text
    fa = r.get("vs_transformers_flash_attn_default")  # llama.cpp f32: checked without flash attention
    if fa is not None:
        text += " (flash attention off; as timed, on: " + (
            "exact)" if fa["exact"] else f"{fa['agreement_pct']:.0f}% from token {fa['first_difference']})")
    return text


def _x(r: dict, key: str, fmt: str = ".2f", unit: str = "x") -> str:
    return f"{r[key]:{fmt}}{unit}" if r.get(key) is not None else "-"


def table(rows: dict, prompt_len: int) -> list[str]:
    lines = ["| engine | precision | prefill ms | prefill tok/s | prefill CPU ms | ms/token | tokens/s | file MiB "
             "| peak RSS MB | decode bandwidth | decode x CT2 | prefill x CT2 | prefill CPU x CT2 "
             "| tokens vs transformers |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        if r["status"] != "ok":
            lines.append(f"| {name} | {r.get('precision', '?')} | {r['status']}: {r.get('error', '')[:120]} "
                         "| | | | | | | | | | | |")
            continue
        bw = "-"
        if r.get("bandwidth_fraction") is not None:
            bw = f"{100 * r['bandwidth_fraction']:.0f}%" + ("" if r.get("step_bytes_exact") else " (est.)")
        lines.append(f"| {name} | {r['precision']} | {r['prefill_ms']:.1f} | {1000 * prompt_len / r['prefill_ms']:.1f} "
                     f"| {_x(r, 'prefill_cpu_ms', '.1f', '')} | {r['ms_per_token']:.2f} | "
                     f"{1000 / r['ms_per_token'] if r['ms_per_token'] > 0 else float('nan'):.1f} | "
                     f"{_x(r, 'file_MB', '.1f', '')} | {r['peak_rss_MB']:.0f} | {bw} | {_x(r, 'decode_vs_ct2')} | "
                     f"{_x(r, 'prefill_vs_ct2')} | {_x(r, 'prefill_cpu_vs_ct2')} | {agreement_text(r)} |")
    return lines


def targets(rows: dict) -> list[str]:
    """Issue 29's targets per matching pair (tensorvm row, llama.cpp row): MET or MISSED with the ratio."""
    def verdict(ok: bool, text: str) -> str:
        return f"{'MET' if ok else 'MISSED'} {text}"

    lines = ["| tensorvm | llama.cpp | decode (>= 1.0x) | prefill (>= 1.0x) | size (<= 1.05x GGUF) "
             "| peak RSS (<= size + 10%) | decode bandwidth (>= 85%) |", "|---|---|---|---|---|---|---|"]
    any_pair = False
    for name, other in LLAMA_OF.items():
        r, ll = rows.get(name), rows.get(other)
        if not r or not ll or r["status"] != "ok" or ll["status"] != "ok":
            continue
        any_pair = True
        dec = ll["ms_per_token"] / r["ms_per_token"] if r["ms_per_token"] > 0 and ll["ms_per_token"] > 0 else 0.0
        pre = ll["prefill_ms"] / r["prefill_ms"]
        size = r["file_MB"] / ll["file_MB"]
        rss = r["peak_rss_MB"] / r["file_MB"]
        r["vs_llama_cpp"] = {"engine": other, "decode": dec, "prefill": pre, "size": size, "rss_over_size": rss}
        bw = r.get("bandwidth_fraction")
        cells = [verdict(dec >= TARGETS["decode"], f"{dec:.2f}x"), verdict(pre >= TARGETS["prefill"], f"{pre:.2f}x"),
                 verdict(size <= TARGETS["size"], f"{size:.2f}x ({r['file_MB']:.0f} vs {ll['file_MB']:.0f} MiB)"),
                 verdict(rss <= TARGETS["rss"], f"{rss:.2f}x ({r['peak_rss_MB']:.0f} MB)"),
                 verdict(bw >= TARGETS["bandwidth"], f"{100 * bw:.0f}%") if bw is not None else "not measured"]
        lines.append(f"| {name} | {other} | " + " | ".join(cells) + " |")
    return lines if any_pair else []


def model_header(m: dict) -> str:
    floor = ""
    if m.get("floor_ms_per_token"):
        floor = (f"; a float32 step reads {m['bytes_per_step'] / 1e6:.0f} MB: {m['floor_ms_per_token']:.1f} ms/token "
                 f"at the {m['streaming_GBps']:.1f} GB/s streaming read measured in the same run")
    return (f"**{m['model']}** ({m['weights_MB']:.0f} MB of float32 weights{floor}; prompt {m['prompt_len']} tokens, "
            f"{m['new_tokens']} timed decode steps, batch 1, {m['threads']} threads; medians of "
            f"{m['reps']} x {m['rounds']} rounds; load average {m['loadavg_start'][0]:.1f} at the start, "
            f"{m['loadavg_max_1min']:.1f} at most between engines)")


# --------------------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="toy shapes, a few seconds (the smoke test)")
    ap.add_argument("--models", help=f"comma list (default {','.join(FULL['models'])}; known: "
                    f"{', '.join(models.MODELS)})")
    ap.add_argument("--engines", default=",".join(ENGINES), help="comma list of " + ", ".join(ENGINES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-len", type=int)
    ap.add_argument("--new-tokens", type=int, help="timed decode steps after the first token")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--cache", help="checkpoints and converted models ($TENSORVM_BENCH_CACHE or bench/.cache)")
    ap.add_argument("--out", help="JSON report")
    ap.add_argument("--md", help="markdown tables")
    ap.add_argument("--strict", action="store_true", help="exit 1 on an engine error or a float32 token mismatch")
    ap.add_argument("--bandwidth", action=argparse.BooleanOptionalAction, default=None,
                    help="measure the streaming read bandwidth, for the float32 floor (default: on, off with --quick)")
    ap.add_argument("--prepare-only", action="store_true",
                    help="build the checkpoints and convert them for every engine, then stop (no timing)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per subprocess")
    # internal: the subprocesses
    ap.add_argument("--task", choices=["prepare", "run"], help=argparse.SUPPRESS)
    ap.add_argument("--engine", help=argparse.SUPPRESS)
    ap.add_argument("--checkpoint", help=argparse.SUPPRESS)
    ap.add_argument("--engine-cache", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    preset = QUICK if args.quick else FULL
    for k in ("prompt_len", "new_tokens", "reps", "rounds"):
        if getattr(args, k) is None:
            setattr(args, k, preset[k])

    if args.task == "prepare":
        run_prepare(args.checkpoint, args.engine.split(","), Path(args.engine_cache), Path(args.result))
        return 0
    if args.task == "run":
        run_worker(args.engine, Path(args.checkpoint), Path(args.engine_cache), args.threads, args.prompt_len,
                   args.new_tokens, args.reps, Path(args.result))
        return 0

    names = [e for e in args.engines.split(",") if e]
    env = processes.start(args.threads, names, engines.make)
    model_names = args.models.split(",") if args.models else preset["models"]
    root = bench_checkpoint.cache_root(args.cache)
    report = {"environment": env, "settings": {k: getattr(args, k) for k in
                                               ("threads", "prompt_len", "new_tokens", "reps", "rounds")},
              "engines": names, "models": {}}
    failed = False
    if args.bandwidth is None:
        args.bandwidth = not args.quick
    if args.bandwidth and not args.prepare_only:
        from bench import bandwidth

        report["bandwidth"] = bandwidth.measure(args.threads)
        print(f"streaming read: {report['bandwidth']['streaming_GBps']:.1f} GB/s "
              f"({report['bandwidth']['best']['kernel']}, {report['bandwidth']['best']['threads']} threads)", flush=True)
    md = [f"CPU: {env['cpu']}; tensorvm kernels {env['tensorvm_kernels'].get('active', '?')}, GEMM "
          f"{env['tensorvm_kernels'].get('gemm', '?')}; commit {env['git_commit']}; {env['date']}.", ""]
    for model in model_names:
        t0 = time.perf_counter()
        prep = _sub(["--task", "prepare", "--checkpoint", model, "--engine", ",".join(names),
                     "--engine-cache", str(root)], args.timeout)
        if prep["status"] != "ok":
            print(f"{model}: could not build the checkpoint: {prep['error']}", file=sys.stderr)
            return 1
        print(f"  {model}: checkpoint and conversions ready ({time.perf_counter() - t0:.1f} s): "
              f"{prep['engines']}", flush=True)
        ckpt, eng_cache, prepared = Path(prep["checkpoint"]), Path(prep["engine_cache"]), prep["engines"]
        if args.prepare_only:
            continue
        rows = {e: {"engine": e, "status": prepared[e]["status"], "error": prepared[e].get("error", ""),
                    "prepare": prepared[e], "first_s": [], "all_s": [], "first_cpu_s": [], "rounds": []}
                for e in names}
        meta = {"model": model, "checkpoint": str(ckpt), "weights_MB": models.weight_bytes(ckpt) / 2**20,
                "prompt_len": args.prompt_len, "new_tokens": args.new_tokens, "threads": args.threads,
                "reps": args.reps, "rounds": args.rounds, "loadavg_start": os.getloadavg(),
                "bytes_per_step": models.bytes_per_step(ckpt)}
        if "bandwidth" in report:
            meta["streaming_GBps"] = report["bandwidth"]["streaming_GBps"]
            meta["floor_ms_per_token"] = meta["bytes_per_step"] / 1e6 / meta["streaming_GBps"]
        loads = [meta["loadavg_start"][0]]
        for rnd in range(args.rounds):
            for e in names:
                r = rows[e]
                if r["status"] not in ("ok",):
                    continue
                la = os.getloadavg()
                res = _sub(["--task", "run", "--engine", e, "--checkpoint", str(ckpt), "--engine-cache",
                            str(eng_cache), "--threads", str(args.threads), "--prompt-len", str(args.prompt_len),
                            "--new-tokens", str(args.new_tokens), "--reps", str(args.reps)], args.timeout)
                loads.append(os.getloadavg()[0])
                res["loadavg_before"] = la
                r["rounds"].append({k: v for k, v in res.items() if k != "tokens"})
                if res["status"] != "ok":
                    r.update(status=res["status"], error=res.get("error", ""))
                    print(f"  {model} {e}: {res['status']}: {res.get('error', '')}", file=sys.stderr, flush=True)
                    continue
                if "tokens" in r and r["tokens"] != res["tokens"]:
                    r["deterministic"] = False
                r.setdefault("deterministic", res["deterministic"])
                r["deterministic"] = r["deterministic"] and res["deterministic"]
                r.update(precision=res["precision"], tokens=res["tokens"], info=res.get("info", {}))
                if "tokens_flash_attn_default" in res:
                    r["tokens_flash_attn_default"] = res["tokens_flash_attn_default"]
                r["first_s"] += res["first_s"]
                r["all_s"] += res["all_s"]
                r["first_cpu_s"] += res["first_cpu_s"]
                r.setdefault("decode_s", []).extend(res.get("decode_s", []))
                r["peak_rss_MB"] = max(r.get("peak_rss_MB", 0), res["peak_rss_MB"])
                r["rss_imports_MB"] = res["rss_imports_MB"]
                r["load_s"] = res["load_s"]
                r.update(file_MB=res["file_MB"], step_bytes=res["step_bytes"], step_bytes_exact=res["step_bytes_exact"])
                if res.get("decode_s"):
                    timing = (f"prefill {1000 * np.median(res['first_s']):.1f} ms, "
                              f"decode {1000 * np.median(res['decode_s']):.2f} ms/token (llama-bench)")
                else:
                    timing = (f"generate(1) {1000 * np.median(res['first_s']):.1f} ms "
                              f"(CPU {1000 * np.median(res['first_cpu_s']):.1f} ms), "
                              f"generate(1+{args.new_tokens}) {1000 * np.median(res['all_s']):.1f} ms")
                print(f"  {model} round {rnd + 1} {e}: {timing}, peak {res['peak_rss_MB']:.0f} MB, "
                      f"load {la[0]:.2f}", flush=True)
        for r in rows.values():
            if r["status"] == "ok" and "precision" not in r:
                r["status"] = "error"
        summarize(rows, args.new_tokens)
        meta["loadavg_max_1min"] = max(loads)
        meta["loadavg_end"] = os.getloadavg()
        report["models"][model] = {"meta": meta, "rows": rows}
        reach = []
        if meta.get("streaming_GBps"):
            for name, r in rows.items():  # weight bytes read per token / time per token, against the streaming read
                if r["status"] == "ok" and r["ms_per_token"] > 0:
                    r["bandwidth_fraction"] = r["step_bytes"] / 1e6 / r["ms_per_token"] / meta["streaming_GBps"]
                    reach.append(f"{name} {100 * r['bandwidth_fraction']:.0f}%")
        lines = [model_header(meta), "", *table(rows, args.prompt_len), ""]
        if reach:
            lines += [f"Decode steps read their weights at this fraction of the streaming read: {', '.join(reach)} "
                      "(bytes per step from the tensors' names; \"est.\": the file size times the checkpoint's "
                      "read-per-step fraction). llama.cpp rows: llama-bench, prefill = the prompt alone "
                      "(-p, no token out), decode = tokens after a context of the prompt's length (-d).", ""]
        pairs = targets(rows)
        if pairs:
            lines += ["Issue 29's targets, each tensorvm row against llama.cpp at the matching precision:", "",
                      *pairs, ""]
        print("\n" + "\n".join(lines), flush=True)
        md += lines
        for name, r in rows.items():
            if r["status"] == "error":
                failed = True
            elif r["status"] != "ok":
                continue
            elif r["precision"] == "float32" and not r.get("vs_transformers", {"exact": True})["exact"]:
                print(f"!! {model}: {name} float32 tokens differ from transformers", file=sys.stderr)
                failed = True
            elif not r.get("deterministic", True):
                print(f"!! {model}: {name} gave different tokens from run to run", file=sys.stderr)
                failed = True
        write_reports(args, report, md)  # after every model: an interrupted run keeps what it measured
    report["environment"]["loadavg_end"] = os.getloadavg()
    write_reports(args, report, md)
    return 1 if (failed and args.strict) else 0


def write_reports(args, report: dict, md: list[str]) -> None:
    for path, text in ((args.out, json.dumps(report, indent=1) + "\n"), (args.md, "\n".join(md) + "\n")):
        if path:
            tmp = Path(f"{path}.tmp")
            tmp.write_text(text)
            os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
