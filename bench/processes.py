"""What the side-by-side benchmarks that run one engine per process share
(bench/decoder_only_bench.py, bench/nllb_bench.py): the prepare step and the call of a
task of the script in a fresh process that answers with a JSON file.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from bench.compare import environment
from bench.engines.base import EngineUnavailable


def prepare(ckpt: Path, names: list[str], make: Callable, cache_root: Path, out: Path) -> None:
    """Every engine's one-off conversion of `ckpt` into <cache_root>/<ckpt name>-engines,
    in this process, untimed; writes the notes (one engine failing does not stop the others)."""
    eng_cache = cache_root / f"{ckpt.name}-engines"
    eng_cache.mkdir(parents=True, exist_ok=True)
    notes = {}
    for name in names:
        t0 = time.perf_counter()
        try:
            notes[name] = {"status": "ok", **make(name).prepare(ckpt, eng_cache)}
        except EngineUnavailable as e:
            notes[name] = {"status": "unavailable", "error": str(e)}
        except Exception as e:  # noqa: BLE001 - that engine's row says why
            notes[name] = {"status": "error", "error": f"{type(e).__name__}: {e}"}
        notes[name]["prepare_s"] = round(time.perf_counter() - t0, 2)
    out.write_text(json.dumps({"status": "ok", "checkpoint": str(ckpt), "engine_cache": str(eng_cache),
                               "engines": notes}))


def run_task(script: Path, args: list[str], timeout: float) -> dict:
    """`script args --result FILE` in a fresh Python; its JSON answer, or the error."""
    with tempfile.TemporaryDirectory(prefix="tvm-bench-") as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, str(script), *args, "--result", str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0 or not out.exists():
            return {"status": "error", "error": f"exit {r.returncode}: {(r.stderr or r.stdout)[-2000:]}"}
        return json.loads(out.read_text())


def start(threads: int, names: list[str], make: Callable) -> dict:
    """The harness's first steps: thread variables for every worker, unknown engine names
    rejected before any work, the environment printed and returned."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    for e in names:
        make(e)
    env = environment()
    print(f"cpu: {env['cpu']} | tensorvm kernels: {env['tensorvm_kernels'].get('active', '?')} "
          f"(gemm {env['tensorvm_kernels'].get('gemm', '?')}) | {threads} threads | commit {env['git_commit']} "
          f"| load average {env['loadavg_start'][0]:.2f}", flush=True)
    return env


def worker(name: str, make: Callable, checkpoint_dir: Path, cache_dir: Path, threads: int,
           measure: Callable[[object, dict], None], out: Path) -> None:
    """A worker's frame: the engine made, its imports (RSS after them), loaded (timed), then
    `measure(engine, result)` fills the result in; an error becomes the row's status; the
    peak RSS and the result are written to `out`."""
    import traceback

    from bench.compare import peak_rss_mb, rss_mb

    res: dict = {"engine": name}
    try:
        eng = make(name)
        res["precision"] = eng.precision
        eng.imports()
        res["rss_imports_MB"] = rss_mb()
        t0 = time.perf_counter()
        eng.load(checkpoint_dir, cache_dir, threads)
        res["load_s"] = time.perf_counter() - t0
        measure(eng, res)
    except EngineUnavailable as e:
        res.update(status="unavailable", error=str(e))
    except Exception as e:  # noqa: BLE001 - reported in the table, the other engines still run
        res.update(status="error", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc())
    # an engine that runs in a child process of its own (llama.cpp) reports that child's peak
    res["peak_rss_MB"] = res.pop("child_peak_rss_MB", None) or peak_rss_mb()
    out.write_text(json.dumps(res))
