"""Sentences per second of tensorvm in one process (one Program, 1 or 2 Sessions on threads),
in 2 processes (a pool, a Program each), on a local Ray cluster (tensorvm.ray, 1 and 2 actors) and of CTranslate2's translate_iterable
(1 and 2 inter threads), in one run, on one checkpoint: the committed trained tiny Marian
(tests/fixtures/data/tiny-marian) with a word tokenizer (text_fixtures.trained_tiny_marian_with_tokenizer),
its pad row zeroed for CTranslate2 (bench/checkpoint.py) and every engine on that copy.
Greedy, texts in and texts out; every configuration's texts are checked equal to the
first's (CTranslate2's tokens are decoded with the program's tokenizer). docs/scale.md.

    python -m bench.ray_bench                         # 20,000 sentences, medians of 3
    python -m bench.ray_bench --sentences 4000 --repeat 1 --out /tmp/ray.json
    python -m bench.ray_bench --checkpoint tests/fixtures/.cache/opus-mt-en-fr-random --max-new-tokens 16 \
        --sentences 512 --repeat 1               # the opus-mt-en-fr shape (random weights)

Timed: texts in to texts out, except that CTranslate2 is handed the token strings
(tokenizing outside its timing, in its favour: tensorvm's times include its tokenizer).
Ray: one job per measurement, actors started (and the program loaded) inside it; the
cluster itself (`ray.init`) is started once, untimed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))
import text_fixtures as tf  # noqa: E402

from bench import checkpoint  # noqa: E402
from bench.compare import environment  # noqa: E402
from bench.engines.base import MarianIds  # noqa: E402
from bench.engines.ctranslate2_engine import CTranslate2Engine, id_names  # noqa: E402

GREEDY = {"num_beams": 1}
MAX_LENGTH = 64  # the tiny Marian's max_length: CTranslate2 gets max_decoding_length 63


def build(cache: Path, checkpoint_dir: str | None) -> tuple[Path, Path, Path]:
    """(program dir, prepared checkpoint, engine cache), made once under `cache`."""
    import tensorvm

    cache.mkdir(parents=True, exist_ok=True)
    src = cache / (f"{Path(checkpoint_dir).name}-words" if checkpoint_dir else "tiny-marian-words")
    if not (src / "vocab.json").exists():
        if checkpoint_dir:
            tf.marian_with_word_tokenizer(Path(checkpoint_dir), src)
        else:
            tf.trained_tiny_marian_with_tokenizer(src)
    ckpt, ck_cache, _ = checkpoint.prepare(src, cache)
    prog = ck_cache / "tiny.tvm"
    if not (prog / "meta.json").exists():
        tensorvm.import_hf(ckpt, prog)
    return prog, ckpt, ck_cache


def tensorvm_run(prog_dir: Path, texts: list, batch: int, sessions: int, options: dict) -> tuple[list, float]:
    """One Program, `sessions` threads each translating a contiguous share in batches."""
    import tensorvm

    prog = tensorvm.load(prog_dir)
    out = [None] * len(texts)
    share = (len(texts) + sessions - 1) // sessions

    def work(lo, hi):
        for i in range(lo, hi, batch):
            j = min(i + batch, hi)
            out[i:j] = prog.translate(texts[i:j], **options)

    threads = [threading.Thread(target=work, args=(k * share, min((k + 1) * share, len(texts))))
               for k in range(sessions)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out, time.perf_counter() - t0


_worker = {}


def _worker_init(prog_dir: str, options: dict) -> None:
    import tensorvm

    _worker["program"], _worker["options"] = tensorvm.load(prog_dir), options


def _worker_translate(texts: list) -> list:
    return _worker["program"].translate(texts, **_worker["options"])


def processes_run(prog_dir: Path, texts: list, batch: int, processes: int, options: dict) -> tuple[list, float]:
    """A pool of fresh processes (spawned, each loading the program once), batches handed
    out in order; the time includes starting them."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    t0 = time.perf_counter()
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_init,
                             initargs=(str(prog_dir), options)) as pool:
        parts = pool.map(_worker_translate, [texts[i:i + batch] for i in range(0, len(texts), batch)])
        out = [t for part in parts for t in part]
    return out, time.perf_counter() - t0


def ct2_run(ct2_dir: Path, ckpt: Path, prog_dir: Path, texts: list, batch: int, inter: int,
            max_new_tokens: int | None) -> tuple[list, float]:
    """CTranslate2 on the token strings the converter named (bench/engines/ctranslate2_engine.py).
    With max_new_tokens (a random checkpoint, which never stops on its own): max_new_tokens - 1
    steps with EOS held off, as transformers' forced EOS at the last step gives (see there)."""
    import ctranslate2
    import tensorvm

    tok = tensorvm.load(prog_dir).tokenizer
    names = id_names(MarianIds.from_checkpoint(ckpt), json.loads((ckpt / "config.json").read_text())["vocab_size"])
    lookup = {n: i for i, n in enumerate(names)}
    tokens = [[names[t] for t in ids] for ids in tok.encode_batch(texts)]
    translator = ctranslate2.Translator(str(ct2_dir), device="cpu", compute_type="float32", inter_threads=inter,
                                        intra_threads=1)
    t0 = time.perf_counter()
    steps = MAX_LENGTH - 1 if max_new_tokens is None else max_new_tokens - 1
    results = list(translator.translate_iterable(tokens, max_batch_size=batch, beam_size=1, max_decoding_length=steps,
                                                 min_decoding_length=0 if max_new_tokens is None else steps))
    secs = time.perf_counter() - t0
    return tok.decode_batch([[lookup[t] for t in r.hypotheses[0]] for r in results], True), secs


def ray_run(prog_dir: Path, texts: list, batch: int, actors: int, options: dict) -> tuple[list, float]:
    import ray
    import tensorvm.ray

    rows = [{"id": i, "text": t} for i, t in enumerate(texts)]
    t0 = time.perf_counter()
    ds = ray.data.from_items(rows, override_num_blocks=max(8, 4 * actors))
    got = tensorvm.ray.translate(ds, prog_dir, actors=actors, batch_size=batch, generate_options=options).take_all()
    secs = time.perf_counter() - t0
    assert sorted(r["id"] for r in got) == list(range(len(texts))), "a row was lost or duplicated"
    assert all(r["error"] is None for r in got)
    out = [None] * len(texts)
    for r in got:
        out[r["id"]] = r["translation"]
    return out, secs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--checkpoint", help="a Marian checkpoint directory (default: the trained tiny Marian); it gets "
                    "a word tokenizer (text_fixtures.marian_with_word_tokenizer)")
    ap.add_argument("--max-new-tokens", type=int, help="a fixed output length (a random checkpoint never stops)")
    ap.add_argument("--cache", default=str(checkpoint.cache_root() / "ray-bench"))
    ap.add_argument("--no-ray", action="store_true", help="leave the Ray rows out")
    ap.add_argument("--out", help="write the report as JSON here")
    args = ap.parse_args(argv)

    prog, ckpt, ck_cache = build(Path(args.cache), args.checkpoint)
    options = dict(GREEDY, **({"max_new_tokens": args.max_new_tokens} if args.max_new_tokens else {}))
    engine = CTranslate2Engine("float32")
    engine.prepare(ckpt, ck_cache)
    ct2_dir = engine._model_dir(ck_cache)
    texts = tf.tiny_words_sentences(args.sentences, seed=11)
    env = environment()
    def ct2(inter):
        return lambda: ct2_run(ct2_dir, ckpt, prog, texts, args.batch, inter, args.max_new_tokens)

    configs = [  # name, cores, run
        ("tensorvm, 1 Program, 1 Session", 1, lambda: tensorvm_run(prog, texts, args.batch, 1, options)),
        ("tensorvm, 1 Program, 2 Sessions (threads)", 2, lambda: tensorvm_run(prog, texts, args.batch, 2, options)),
        ("tensorvm, 2 processes (a Program each)", 2, lambda: processes_run(prog, texts, args.batch, 2, options)),
        ("CTranslate2 translate_iterable, 1 inter thread", 1, ct2(1)),
        ("CTranslate2 translate_iterable, 2 inter threads", 2, ct2(2)),
    ]
    times: dict = {name: [] for name, _, _ in configs}
    outputs: dict = {}
    for _ in range(args.repeat):  # rounds, so that a change of load falls on every configuration
        for name, _, run in configs:
            out, secs = run()
            times[name].append(secs)
            outputs[name] = out
    if not args.no_ray:
        import ray

        ray.data.DataContext.get_current().enable_progress_bars = False
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}})
        ray_configs = [(f"tensorvm.ray, {a} actor{'s' if a > 1 else ''} x 1 thread", a,
                        (lambda a=a: ray_run(prog, texts, args.batch, a, options))) for a in (1, 2)]
        for name, _, _ in ray_configs:
            times[name] = []
        for _ in range(args.repeat):
            for name, _, run in ray_configs:
                out, secs = run()
                times[name].append(secs)
                outputs[name] = out
        ray.shutdown()
        configs += ray_configs
    ref_name = configs[0][0]
    ref = outputs[ref_name]
    agree = {name: sum(a == b for a, b in zip(out, ref)) for name, out in outputs.items()}
    env["loadavg_end"] = os.getloadavg()
    rows = []
    ct2_by_cores = {cores: len(texts) / statistics.median(times[name])
                    for name, cores, _ in configs if name.startswith("CTranslate2")}
    print(f"{Path(args.checkpoint).name if args.checkpoint else 'tiny-marian'}: {len(texts)} sentences ({min(map(len, texts))}-{max(map(len, texts))} chars), {options}, "
          f"batch {args.batch}; "
          f"{env['cpu']}, {env['nproc']} cores; load {env['loadavg_start'][0]:.1f} -> {env['loadavg_end'][0]:.1f}; "
          f"medians of {args.repeat}")
    print(f"| configuration | cores | sentences/s | per core | vs CTranslate2 on as many cores | "
          f"rows equal to '{ref_name}' |")
    print("|---|---|---|---|---|---|")
    for name, cores, _ in configs:
        rate = len(texts) / statistics.median(times[name])
        ratio = rate / ct2_by_cores[cores] if cores in ct2_by_cores else None
        rows.append({"name": name, "cores": cores, "seconds": times[name], "sentences_per_s": rate,
                     "per_core": rate / cores, "vs_ctranslate2": ratio, "rows_equal": agree[name]})
        print(f"| {name} | {cores} | {rate:,.0f} | {rate / cores:,.0f} | "
              f"{'' if ratio is None else f'{ratio:.2f}x'} | {agree[name]:,}/{len(texts):,} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"environment": env, "checkpoint": str(args.checkpoint or "tiny-marian"),
                                              "options": options, "sentences": len(texts), "batch": args.batch,
                                              "repeat": args.repeat, "rows": rows}, indent=1))
    return 0 if all(v == len(texts) for v in agree.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
