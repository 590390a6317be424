#!/usr/bin/env python3
"""Side-by-side Marian generation benchmark: tensorvm vs transformers, CTranslate2, ONNX Runtime.

    python bench/compare.py --checkpoint opus-mt-en-fr-random --threads 2 --out results.json
    python bench/compare.py --quick --out /tmp/quick.json          # tiny checkpoint, seconds

Every engine gets the same inputs (seeded random source ids) and runs, one after
the other, in a fresh worker process of its own (fair peak RSS, no thread pools
of one runtime spinning while another is timed). One-off conversions / exports
run before, in another process, and are reported but not timed as load.
float32 engines must reproduce transformers' tokens exactly; int8 rows report
their token agreement. See bench/README.md for the columns and fairness notes.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import bandwidth, checkpoint  # noqa: E402
from bench.engines import (  # noqa: E402
    DEFAULT_ENGINES, ENGINES, QUICK_DEFAULT_ENGINES, REFERENCE, EngineUnavailable, MarianIds, make_engine,
)

FULL = dict(
    checkpoint="opus-mt-en-fr-random", lengths=[8, 32, 128], batches=[1, 8], beams=[1, 4], new_tokens=32,
    warmup=1, reps=5, rounds=2, bw_mib=512, bw_reps=7,
)
QUICK = dict(
    checkpoint="tiny-marian", lengths=[8, 16], batches=[1, 2], beams=[1, 4], new_tokens=8,
    warmup=1, reps=2, rounds=1, bw_mib=256, bw_reps=3,
)


# --------------------------------------------------------------------------- helpers


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM). Not ru_maxrss: Linux carries the parent's RSS at
    fork over into a child's ru_maxrss across exec, which would charge the harness's memory to
    every worker."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def make_inputs(checkpoint_dir: Path, lengths: list[int], max_batch: int, seed: int) -> dict[int, np.ndarray]:
    """ids[L] = [max_batch, L]: L-1 random ordinary tokens (no EOS / UNK / pad) then EOS,
    as MarianTokenizer ends every source with </s>. Batch b uses the first b rows."""
    ids = MarianIds.from_checkpoint(checkpoint_dir)
    cfg = json.loads((checkpoint_dir / "config.json").read_text())
    lo, hi = 2, cfg["vocab_size"]  # 0 = EOS, 1 = UNK
    rng = np.random.default_rng(seed)
    out = {}
    for L in lengths:
        x = rng.integers(lo, hi, size=(max_batch, L), dtype=np.int64)
        while (x == ids.pad).any():  # redraw pad (and anything special) positions
            bad = x == ids.pad
            x[bad] = rng.integers(lo, hi, size=int(bad.sum()), dtype=np.int64)
        x[:, -1] = ids.eos
        out[L] = x
    return out


def median(xs):
    return float(np.median(xs)) if xs else None


# --------------------------------------------------------------------------- worker (one engine)


def run_worker(name: str, run_dir: Path) -> None:
    cfg = json.loads((run_dir / "config.json").read_text())
    out_json = run_dir / f"{name}.json"
    res: dict = {"engine": name, "status": "error", "cases": []}
    threads = cfg["threads"]
    try:
        eng = make_engine(name)
        res["precision"] = eng.precision
        res["rss_start_MB"] = rss_mb()
        eng.imports()
        res["rss_after_imports_MB"] = rss_mb()
        load_s = eng.load(Path(cfg["run_checkpoint"]), Path(cfg["cache_dir"]), threads)
        res["load_s"] = load_s
        res["rss_after_load_MB"] = rss_mb()
        res["info"] = eng.info()
        data = np.load(run_dir / "inputs.npz")
        tokens = {}
        M = cfg["new_tokens"]
        steps = M + eng.decode_steps_offset
        for L in cfg["lengths"]:
            for B in cfg["batches"]:
                ids = np.ascontiguousarray(data[f"L{L}"][:B])
                mask = np.ones_like(ids)
                beams = []
                for K in sorted(cfg["beams"]):
                    why = eng.supports(B, K)
                    if why:
                        res.setdefault("skipped_cases", {})[f"L{L}_B{B}_K{K}"] = why
                    else:
                        beams.append(K)
                if not beams:
                    continue
                enc_ms, enc_note = None, None
                if eng.encode_is_separate:
                    for _ in range(cfg["warmup"]):
                        eng.encode(ids, mask)
                    ts = []
                    for _ in range(cfg["reps"]):
                        t0 = time.perf_counter()
                        eng.encode(ids, mask)
                        ts.append(time.perf_counter() - t0)
                    enc_ms, enc_note = 1e3 * median(ts), "measured"
                    enc_all = [round(1e3 * t, 3) for t in ts]
                derived_enc = None  # (ms, runs) from greedy, reused for the beam rows
                for K in beams:
                    if not eng.encode_is_separate and derived_enc is None:
                        # a call decoding one token (encoder + cross K/V + one step); the encoder
                        # is that minus one step (derived below, from greedy when it is run: the
                        # encoder does not depend on the beam size, and the first beam step is
                        # cheaper than the others, which would bias a per-beam estimate)
                        for _ in range(cfg["warmup"]):
                            eng.encode_estimate_call(ids, mask, K)
                        ts = []
                        for _ in range(cfg["reps"]):
                            t0 = time.perf_counter()
                            eng.encode_estimate_call(ids, mask, K)
                            ts.append(time.perf_counter() - t0)
                        one_step_ms = 1e3 * median(ts)
                        enc_all = [round(1e3 * t, 3) for t in ts]
                    for _ in range(cfg["warmup"]):
                        seq = eng.generate(ids, mask, K, M, M)
                    ts, outs = [], []
                    gc.collect()
                    gc.disable()
                    try:
                        for _ in range(cfg["reps"]):
                            t0 = time.perf_counter()
                            seq = eng.generate(ids, mask, K, M, M)
                            ts.append(time.perf_counter() - t0)
                            outs.append(seq)
                    finally:
                        gc.enable()
                    gen_ms = 1e3 * median(ts)
                    deterministic = all(np.array_equal(o, outs[0]) for o in outs)
                    e_ms, note, extra = enc_ms, enc_note, {}
                    if not eng.encode_is_separate:
                        if derived_enc is None:
                            step_ms = (gen_ms - one_step_ms) / max(steps - 1, 1)
                            derived_enc = (max(one_step_ms - step_ms, 0.0), K, one_step_ms, step_ms)
                        e_ms, note = derived_enc[0], "derived"
                        extra = {
                            "encoder_derived_from_beams": derived_enc[1],
                            "encoder_plus_one_step_ms": derived_enc[2],
                            "derived_step_ms": derived_enc[3],
                        }
                    key = f"L{L}_B{B}_K{K}"
                    tokens[key] = np.asarray(outs[-1], dtype=np.int64)
                    res["cases"].append(
                        {
                            "key": key,
                            "src_len": L,
                            "batch": B,
                            "beams": K,
                            "new_tokens": M,
                            "decoder_steps_run": steps,
                            "encoder_ms": e_ms,
                            "encoder_note": note,
                            "encoder_runs_ms": enc_all,
                            "generate_ms": gen_ms,
                            "generate_runs_ms": [round(1e3 * t, 3) for t in ts],
                            "ms_per_token": (gen_ms - (e_ms or 0.0)) / M,
                            "sentences_per_s": B / (gen_ms / 1e3),
                            "deterministic": deterministic,
                            "out_shape": list(tokens[key].shape),
                            **extra,
                        }
                    )
                    print(f"  [{name}] {key}: generate {gen_ms:.1f} ms", file=sys.stderr, flush=True)
        np.savez(run_dir / f"{name}_tokens.npz", **tokens)
        res["status"] = "ok"
    except EngineUnavailable as e:
        res["status"] = "unavailable"
        res["error"] = str(e)
    except Exception as e:  # report, never hide
        res["error"] = f"{type(e).__name__}: {e}"
        res["traceback"] = traceback.format_exc()
    res["peak_rss_MB"] = peak_rss_mb()
    if "rss_after_imports_MB" in res:
        res["peak_rss_minus_imports_MB"] = res["peak_rss_MB"] - res["rss_after_imports_MB"]
    out_json.write_text(json.dumps(res, indent=2) + "\n")


def run_prepare(name: str, run_dir: Path) -> None:
    cfg = json.loads((run_dir / "config.json").read_text())
    res: dict = {"engine": name}
    try:
        eng = make_engine(name)
        t0 = time.perf_counter()
        res["notes"] = eng.prepare(Path(cfg["run_checkpoint"]), Path(cfg["cache_dir"]))
        res["prepare_s"] = time.perf_counter() - t0
        res["status"] = "ok"
    except EngineUnavailable as e:
        res["status"] = "unavailable"
        res["error"] = str(e)
    except Exception as e:
        res["status"] = "error"
        res["error"] = f"{type(e).__name__}: {e}"
        res["traceback"] = traceback.format_exc()
    (run_dir / f"{name}.prepare.json").write_text(json.dumps(res, indent=2) + "\n")


# --------------------------------------------------------------------------- parent


def merge_rounds(results: list[dict], new_tokens: int) -> dict:
    """One engine's worker results of several rounds as one: the timed repetitions of
    every case pooled before taking medians (a derived encoder time, which is itself a
    difference of medians, is the median over rounds), peak RSS the largest, load time
    the median. A failed round makes the engine's result that failure."""
    failed = [r for r in results if r.get("status") != "ok"]
    if failed or len(results) == 1:
        return failed[0] if failed else results[0]
    merged = dict(results[-1])
    merged["rounds"] = len(results)
    merged["peak_rss_MB"] = max(r["peak_rss_MB"] for r in results)
    merged["load_s"] = median([r["load_s"] for r in results])
    merged["loadavg_before"] = [r["loadavg_before"] for r in results]
    merged["loadavg_after"] = [r["loadavg_after"] for r in results]
    cases = []
    for c in results[-1]["cases"]:
        same = [next(x for x in r["cases"] if x["key"] == c["key"]) for r in results]
        m = dict(c)
        m["generate_runs_ms"] = [t for x in same for t in x["generate_runs_ms"]]
        m["generate_ms"] = median(m["generate_runs_ms"])
        if c["encoder_note"] == "measured":
            m["encoder_runs_ms"] = [t for x in same for t in x["encoder_runs_ms"]]
            m["encoder_ms"] = median(m["encoder_runs_ms"])
        elif c["encoder_ms"] is not None:
            m["encoder_ms"] = median([x["encoder_ms"] for x in same])
        m["ms_per_token"] = (m["generate_ms"] - (m["encoder_ms"] or 0.0)) / new_tokens
        m["sentences_per_s"] = m["batch"] / (m["generate_ms"] / 1e3)
        m["deterministic"] = all(x["deterministic"] for x in same)
        cases.append(m)
    merged["cases"] = cases
    return merged


def _spawn(mode: str, name: str, run_dir: Path, threads: int, log, python: str = sys.executable) -> int:
    env = dict(os.environ)
    for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[v] = str(threads)
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    cmd = [python, str(Path(__file__).resolve()), mode, name, "--run-dir", str(run_dir)]
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    # the worker's output goes straight to the log, so `tail -f` shows its progress
    r = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.write("\n")
    log.flush()
    return r.returncode


def parity(result: dict, ref_tokens: dict | None, tokens: dict | None, precision: str) -> None:
    """Mark every case with its agreement with the reference tokens."""
    for c in result.get("cases", []):
        key = c["key"]
        if ref_tokens is None or key not in ref_tokens or tokens is None:
            c["parity"] = "n/a"
            continue
        a, b = tokens[key], ref_tokens[key]
        exact = a.shape == b.shape and np.array_equal(a, b)
        if a.shape[0] == b.shape[0]:
            T = max(a.shape[1], b.shape[1])
            pa = np.full((a.shape[0], T), -1)
            pb = np.full((b.shape[0], T), -2)
            pa[:, : a.shape[1]] = a
            pb[:, : b.shape[1]] = b
            agree = float((pa[:, 1:] == pb[:, 1:]).mean()) * 100
            diff = np.argwhere(pa != pb)
        else:
            agree, diff = 0.0, np.zeros((1, 2), dtype=int)
        c["token_agreement_pct"] = agree
        c["exact_match"] = bool(exact)
        if exact:
            c["parity"] = "exact"
        elif precision == "float32":
            r, t = (int(x) for x in diff[0])
            c["parity"] = "MISMATCH"
            c["first_mismatch"] = {"row": r, "pos": t, "engine": int(pa[r, t]), "reference": int(pb[r, t])}
        else:
            c["parity"] = f"{agree:.1f}%"


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def print_table(report: dict) -> str:
    ref = report["ratio_reference"]
    env = report.get("environment", {})
    k = env.get("tensorvm_kernels", {})
    lines = [f"cpu: {env.get('cpu', '?')} | tensorvm kernels: {k.get('active', '?')} (w8a8 {k.get('w8a8', '?')}; "
             f"gemm {k.get('gemm', '?')}; "
             f"supported: {' '.join(k.get('variants_supported', []))})"]
    hdr = (
        f"{'src':>4} {'B':>2} {'beam':>4}  {'engine':<20} {'enc ms':>8} {'ms/tok':>8} {'sent/s':>8} "
        f"{'x ' + ref:>14} {'tokens':>9} {'peak MB':>8} {'load s':>7}"
    )
    lines.append(hdr)
    lines.append("-" * len(hdr))
    engines = report["engines"]
    keys = []
    for e in engines.values():
        for c in e.get("cases", []):
            if c["key"] not in keys:
                keys.append(c["key"])
    for key in keys:
        for name, e in engines.items():
            c = next((c for c in e.get("cases", []) if c["key"] == key), None)
            if c is None:
                continue
            enc = fmt(c["encoder_ms"], ".2f") + ("*" if c["encoder_note"] == "derived" else " ")
            lines.append(
                f"{c['src_len']:>4} {c['batch']:>2} {c['beams']:>4}  {name:<20} {enc:>9}"
                f"{fmt(c['ms_per_token'], '.2f'):>8} {fmt(c['sentences_per_s'], '.2f'):>8} "
                f"{fmt(c.get('speedup_vs_ref'), '.2f'):>14} {c.get('parity', '?'):>9} "
                f"{fmt(e.get('peak_rss_MB'), '.0f'):>8} {fmt(e.get('load_s'), '.2f'):>7}"
            )
        lines.append("")
    for name, e in engines.items():
        if e.get("status") != "ok":
            lines.append(f"{name:<20} {e.get('status', '?').upper()}: {e.get('error', '')}")
        elif e.get("skipped_cases"):
            why = sorted(set(e["skipped_cases"].values()))
            lines.append(f"{name:<20} skipped {len(e['skipped_cases'])} case(s): {'; '.join(why)}")
    return "\n".join(lines)


def bandwidth_text(report: dict) -> str:
    w = report["weights"]
    bw = report["bandwidth"]
    s = report["bandwidth"]["streaming_GBps"]
    lines = [
        "Memory-bandwidth limit (batch-1 decode):",
        f"  formula: {w['formula']}",
        f"  params read per step: {w['params_per_step']:,} "
        f"(decoder layers {w['decoder_layer_params_per_step']:,} + output projection "
        f"{w['output_projection_params']:,} = {100 * w['output_projection_share']:.0f}% + final_logits_bias "
        f"{w['final_logits_bias_params']:,}); cross-attn k/v (prefill only) {w['cross_kv_projection_params_prefill_only']:,}",
        f"  bytes per step: float32 {w['bytes_per_step_float32'] / 1e6:.1f} MB, int8 {w['bytes_per_step_int8'] / 1e6:.1f} MB, "
        f"int4 {w['bytes_per_step_int4'] / 1e6:.1f} MB (group 32, f16 scales)",
    ]
    lines.append(f"  streaming bandwidth, {bw['buffer_MiB']} MiB buffers, medians of {bw['reps']}:")
    for r in bw["runs"]:
        if "read_GBps" in r:
            lines.append(
                f"    {r['kernel'].split(',')[0].split(' (')[0]:<10} {r['threads']} thread(s): "
                f"read {r['read_GBps']:.2f} GB/s, copy (read+write) {r['copy_GBps']:.2f} GB/s"
            )
        else:
            lines.append(f"    {r.get('kernel', '?')}: {r.get('error')}")
    lines.append(
        f"  floor at {s:.2f} GB/s (best read): float32 {w['bytes_per_step_float32'] / s / 1e6:.2f} ms/token, "
        f"int8 {w['bytes_per_step_int8'] / s / 1e6:.2f} ms/token, int4 {w['bytes_per_step_int4'] / s / 1e6:.2f} ms/token"
    )
    for name, frac in report.get("bandwidth_fraction", {}).items():
        lines.append(
            f"  {name:<20} batch-1 greedy: {frac['ms_per_token_mean']:.2f} ms/token -> "
            f"{frac['effective_GBps']:.2f} GB/s = {100 * frac['fraction']:.0f}% of streaming bandwidth"
        )
    return "\n".join(lines)


def make_chart(report: dict, path: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"no chart: matplotlib not importable ({e})"
    engines = {n: e for n, e in report["engines"].items() if e.get("status") == "ok"}
    if not engines:
        return "no chart: no engine ran"
    keys = [c["key"] for c in next(iter(engines.values()))["cases"]]
    labels = [k.replace("_", " ").replace("L", "src ").replace("B", "B").replace("K", "beam ") for k in keys]
    metrics = [("ms_per_token", "ms per generated token (lower is better)"),
               ("sentences_per_s", "sentences / s (higher is better)"),
               ("encoder_ms", "encoder ms (* derived for CTranslate2)")]
    fig, axes = plt.subplots(len(metrics), 1, figsize=(min(18, max(10, 0.22 * len(keys) * len(engines))), 12))
    width = 0.8 / len(engines)
    for ax, (m, title) in zip(axes, metrics):
        for i, (name, e) in enumerate(engines.items()):
            vals = []
            for k in keys:
                c = next((c for c in e["cases"] if c["key"] == k), None)
                vals.append(np.nan if c is None or c.get(m) is None else c[m])
            ax.bar(np.arange(len(keys)) + i * width, vals, width, label=name)
        ax.set_xticks(np.arange(len(keys)) + width * (len(engines) - 1) / 2)
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8, ncol=len(engines))
    env = report["environment"]
    fig.suptitle(
        f"{report['checkpoint']['name']} | {report['settings']['threads']} threads | "
        f"{report['settings']['new_tokens']} new tokens | {env.get('cpu', '')}"
        f" | kernels {env.get('tensorvm_kernels', {}).get('active', '?')}",
        fontsize=10,
    )
    fig.tight_layout()
    tmp = path.with_name(path.name + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)  # never a half-written chart
    return None


def environment() -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        commit = ""
    try:  # the CPU as tensorvm sees it and the kernel variant its engines run (TENSORVM_ISA forces one)
        import tensorvm

        kernels = tensorvm._C.cpu_info()
    except Exception as e:  # noqa: BLE001 - the report says why instead
        kernels = {"error": str(e)}
    return {
        "cpu": cpu,
        "tensorvm_kernels": kernels,
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git_commit": commit,
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "loadavg_start": os.getloadavg(),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", help="checkpoint dir or fixture name (default opus-mt-en-fr-random; --quick: tiny-marian)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="results.json", help="JSON report path (the PNG goes beside it)")
    ap.add_argument("--png", help="chart path (default: --out with .png)")
    ap.add_argument("--quick", action="store_true", help="tiny checkpoint, small sizes: a smoke run of seconds")
    ap.add_argument("--engines", help=f"comma list (default {','.join(DEFAULT_ENGINES)}; --quick: without the "
                    f"executorch ones; known: {','.join(ENGINES)})")
    ap.add_argument("--lengths", help="source lengths, comma list")
    ap.add_argument("--batches", help="batch sizes, comma list")
    ap.add_argument("--beams", help="beam sizes, comma list (1 = greedy)")
    ap.add_argument("--new-tokens", type=int, help="new tokens per sequence (fixed; the last one is EOS)")
    ap.add_argument("--reps", type=int, help="timed repetitions (medians are reported)")
    ap.add_argument("--warmup", type=int, help="untimed warm-up runs per case")
    ap.add_argument("--rounds", type=int, help="run the engines this many times in turn and pool the repetitions "
                    "(default 1; 2 for the full run)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--cache", help=f"cache for converted/exported models (${checkpoint.BENCH_CACHE_ENV} or bench/.cache)")
    ap.add_argument("--keep-pad-row", action="store_true", help="do not zero the pad embedding row (see checkpoint.py)")
    ap.add_argument("--no-bandwidth", action="store_true", help="skip the bandwidth measurement")
    ap.add_argument("--strict", action="store_true", help="exit 1 if a float32 engine mismatches or an engine errors")
    ap.add_argument("--worker", metavar="ENGINE", help=argparse.SUPPRESS)
    ap.add_argument("--prepare", metavar="ENGINE", help=argparse.SUPPRESS)
    ap.add_argument("--run-dir", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        run_worker(args.worker, Path(args.run_dir))
        return 0
    if args.prepare:
        run_prepare(args.prepare, Path(args.run_dir))
        return 0

    base = dict(QUICK if args.quick else FULL)
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    settings = {
        "threads": args.threads,
        "lengths": ints(args.lengths) if args.lengths else base["lengths"],
        "batches": ints(args.batches) if args.batches else base["batches"],
        "beams": ints(args.beams) if args.beams else base["beams"],
        "new_tokens": args.new_tokens or base["new_tokens"],
        "warmup": base["warmup"] if args.warmup is None else args.warmup,
        "reps": args.reps or base["reps"],
        "rounds": args.rounds or base["rounds"],
        "seed": args.seed,
        "quick": args.quick,
    }
    engines = args.engines.split(",") if args.engines else list(QUICK_DEFAULT_ENGINES if args.quick else DEFAULT_ENGINES)
    for n in engines:
        if n not in ENGINES:
            ap.error(f"unknown engine {n}")
    if REFERENCE not in engines:
        print(f"note: {REFERENCE} (the parity reference) not selected; parity will be n/a", file=sys.stderr)

    t_start = time.perf_counter()
    src_ck = checkpoint.resolve(args.checkpoint or base["checkpoint"])
    run_ck, ck_cache, ck_notes = checkpoint.prepare(src_ck, checkpoint.cache_root(args.cache), args.keep_pad_row)
    print(f"checkpoint: {src_ck}\n  engines load: {run_ck}\n  pad row: {ck_notes['pad_row']}", file=sys.stderr)

    run_dir = Path(tempfile.mkdtemp(prefix="tensorvm-bench-"))
    inputs = make_inputs(run_ck, settings["lengths"], max(settings["batches"]), settings["seed"])
    np.savez(run_dir / "inputs.npz", **{f"L{L}": x for L, x in inputs.items()})
    (run_dir / "config.json").write_text(
        json.dumps({**settings, "run_checkpoint": str(run_ck), "cache_dir": str(ck_cache)}, indent=2)
    )
    report: dict = {
        "checkpoint": {"name": src_ck.name, **ck_notes, "engines_load": str(run_ck)},
        "settings": settings,
        "environment": environment(),
        "fixed_length_protocol": (
            "every engine generates with min_new_tokens = max_new_tokens = new_tokens and Marian's default "
            "processors: EOS is banned until the last step, where forced_eos_token_id makes it the last token"
        ),
        "engines": {},
    }
    weights = bandwidth.decode_step_weights(run_ck)
    report["weights"] = weights
    if not args.no_bandwidth:
        print("measuring streaming bandwidth ...", file=sys.stderr)
        report["bandwidth"] = bandwidth.measure(
            args.threads, base["bw_mib"], base["bw_reps"], build_dir=checkpoint.cache_root(args.cache) / "bw"
        )

    log_path = run_dir / "workers.log"
    print(f"run dir {run_dir} (worker output: {log_path})", file=sys.stderr)
    prepared: dict[str, dict] = {}
    pythons: dict[str, str] = {}
    rounds: dict[str, list[dict]] = {}
    with open(log_path, "w") as log:
        for name in engines:
            print(f"[{name}] prepare ...", file=sys.stderr, flush=True)
            try:  # an engine with a venv of its own makes it here (once; it stays in the cache)
                pythons[name] = make_engine(name).interpreter(checkpoint.cache_root(args.cache))
            except Exception as e:  # noqa: BLE001 - the report says why; the other engines still run
                status = "unavailable" if isinstance(e, EngineUnavailable) else "error"
                report["engines"][name] = {"status": status, "error": f"{e}" if status == "unavailable" else f"{type(e).__name__}: {e}"}
                print(f"[{name}] {status}: {e}", file=sys.stderr)
                continue
            _spawn("--prepare", name, run_dir, args.threads, log, pythons[name])
            prep_file = run_dir / f"{name}.prepare.json"
            prep = json.loads(prep_file.read_text()) if prep_file.exists() else {"status": "error", "error": "prepare crashed"}
            if prep.get("status") != "ok":
                report["engines"][name] = {"status": prep.get("status", "error"), "error": prep.get("error"), "prepare": prep}
                print(f"[{name}] {prep.get('status')}: {prep.get('error')}", file=sys.stderr)
                continue
            prepared[name] = prep
        # Every engine once per round, in the same order: a slow drift of a shared
        # machine's speed then falls on all engines alike instead of on whichever ran last.
        for rnd in range(settings["rounds"]):
            for name, prep in prepared.items():
                of = f" (round {rnd + 1}/{settings['rounds']})" if settings["rounds"] > 1 else ""
                print(f"[{name}] run{of} ...", file=sys.stderr, flush=True)
                la0 = os.getloadavg()
                rc = _spawn("--worker", name, run_dir, args.threads, log, pythons[name])
                res_file = run_dir / f"{name}.json"
                res = json.loads(res_file.read_text()) if res_file.exists() else {"status": "error", "error": f"worker exit {rc}"}
                res_file.unlink(missing_ok=True)
                res["prepare"] = prep
                res["loadavg_before"] = la0
                res["loadavg_after"] = os.getloadavg()
                rounds.setdefault(name, []).append(res)
                if res.get("status") != "ok":
                    print(f"[{name}] {res.get('status')}: {res.get('error')}", file=sys.stderr)
    for name, results in rounds.items():
        report["engines"][name] = merge_rounds(results, settings["new_tokens"])

    # parity against transformers
    def tokens_of(name):
        p = run_dir / f"{name}_tokens.npz"
        return dict(np.load(p)) if p.exists() else None

    ref_tokens = tokens_of(REFERENCE) if report["engines"].get(REFERENCE, {}).get("status") == "ok" else None
    for name, res in report["engines"].items():
        parity(res, ref_tokens, tokens_of(name), res.get("precision", "float32"))

    # ratios: tensorvm when it ran, else transformers
    ratio_ref = "tensorvm" if report["engines"].get("tensorvm", {}).get("status") == "ok" else REFERENCE
    report["ratio_reference"] = ratio_ref
    ref_cases = {c["key"]: c for c in report["engines"].get(ratio_ref, {}).get("cases", [])}
    for res in report["engines"].values():
        for c in res.get("cases", []):
            r = ref_cases.get(c["key"])
            if not r:
                continue
            c["speedup_vs_ref"] = r["generate_ms"] / c["generate_ms"]
            c["ms_per_token_vs_ref"] = c["ms_per_token"] / r["ms_per_token"] if r["ms_per_token"] else None
            if c["encoder_ms"] and r["encoder_ms"]:
                c["encoder_ms_vs_ref"] = c["encoder_ms"] / r["encoder_ms"]

    # fraction of the bandwidth reached at batch-1 greedy decode (mean over source lengths)
    if "bandwidth" in report:
        bw = report["bandwidth"]["streaming_GBps"]
        report["bandwidth_fraction"] = {}
        for name, res in report["engines"].items():
            cs = [c for c in res.get("cases", []) if c["batch"] == 1 and c["beams"] == 1]
            if not cs:
                continue
            ms = float(np.mean([c["ms_per_token"] for c in cs]))
            nbytes = weights[{"int8": "bytes_per_step_int8", "int4": "bytes_per_step_int4"}.get(
                res.get("precision"), "bytes_per_step_float32")]
            eff = nbytes / (ms / 1e3) / 1e9
            report["bandwidth_fraction"][name] = {"ms_per_token_mean": ms, "effective_GBps": eff, "fraction": eff / bw}

    report["environment"]["loadavg_end"] = os.getloadavg()
    report["wall_s"] = time.perf_counter() - t_start

    table = print_table(report)
    print()
    print(f"checkpoint {src_ck.name} ({ck_notes['pad_row'].split(';')[0]}), threads {args.threads}, "
          f"{settings['new_tokens']} new tokens (fixed), medians of {settings['reps']} x {settings['rounds']} round(s) "
          f"after {settings['warmup']} warm-up")
    print(f"ratio 'x {ratio_ref}' = {ratio_ref} generate time / engine generate time; * = encoder ms derived")
    print(table)
    if "bandwidth" in report:
        print()
        print(bandwidth_text(report))
    mism = [
        f"{n} {c['key']}"
        for n, r in report["engines"].items()
        if r.get("precision") == "float32"
        for c in r.get("cases", [])
        if c.get("parity") == "MISMATCH"
    ]
    if mism:
        print("\n!!! TOKEN MISMATCH vs transformers (float32 must be exact): " + ", ".join(mism))
    la = report["environment"]["loadavg_start"][0]
    if la > (os.cpu_count() or 1):
        print(f"\nwarning: load average was {la:.1f} on {os.cpu_count()} cores at the start: timings are disturbed")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    png = Path(args.png) if args.png else out.with_suffix(".png")
    note = make_chart(report, png)
    report["chart"] = str(png) if note is None else note
    report["worker_log"] = str(log_path)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=2, default=float) + "\n")
    os.replace(tmp, out)  # never a half-written report
    print(f"\nwrote {out}" + (f" and {png}" if note is None else f" ({note})"))
    errors = [n for n, r in report["engines"].items() if r.get("status") == "error"]
    if args.strict and (mism or errors):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
