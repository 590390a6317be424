"""Soak, load and concurrency checks of the runtime (issue 11, ask 4), on a small program.

    python3 bench/soak.py                       # the full run: 10,000 calls, 5 minutes on 4 threads
    python3 bench/soak.py --quick               # about 20 s (tests/python/test_soak.py runs this)
    python3 bench/soak.py --program DIR --calls N --seconds S --threads T --out FILE.json

Four parts, each a pass/fail with its figures:

1. soak: N generate calls on one Session in this process, RSS (VmRSS) sampled every
   N/50 calls. "Flat" means the RSS after warm-up (the first 10% of calls) grows by less
   than --rss-slack-mb to the end.
2. concurrency: 1 Program and T Sessions on T threads for S seconds, each thread cycling
   through the same batches; every output must equal the single-threaded reference
   computed first, and every thread must keep making progress (a thread with no
   finished call for --stall-seconds is a deadlock).
3. churn: while the concurrency threads run, another thread keeps creating a Session,
   running one call and deleting it (a Session deleted in the middle of others' runs).
   Cancelling a generation is not tested: the runtime has no generation callback or
   cancel mechanism (a Session.run call runs to completion), which the report states.
4. file swap: a child process loads a copy of the program, then the parent corrupts
   or truncates the copy's files under it (in place, or by renaming a new file over
   it) and the child runs generate again, then loads the program afresh. Each case
   records how the child ended: results, an error, or a signal (SIGBUS).

Program: a program directory, or by default the tiny-marian test fixture imported
into a temporary directory (built on first use by tests/fixtures/make_checkpoints.py).
Writes a JSON report (--out) with the CPU name from lscpu; exits 1 if any part failed.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


def tiny_marian(workdir: Path) -> Path:
    from bench import checkpoint
    from tensorvm.pycompiler.import_hf import import_hf

    out = workdir / "tiny-marian.tvm"
    import_hf(checkpoint.resolve("tiny-marian"), out)
    return out


def batches(meta: dict, seed: int, count: int, batch: int = 2, max_len: int = 8):
    """`count` padded batches of random sources ending in EOS, as the parity tests make them."""
    rng = np.random.default_rng(seed)
    pad, eos = meta["pad_token_id"], meta["eos_token_id"]
    low, high = 2, min(pad, meta.get("vocab_size", pad))
    out = []
    for _ in range(count):
        rows = [list(rng.integers(low, high, size=int(rng.integers(1, max_len)))) + [eos] for _ in range(batch)]
        width = max(len(r) for r in rows)
        ids = np.full((batch, width), pad, dtype=np.int64)
        mask = np.zeros((batch, width), dtype=np.int64)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = r
            mask[i, :len(r)] = 1
        out.append((ids, mask))
    return out


def generate(session, ids, mask, max_new_tokens: int):
    return session.run_named("generate", {"input_ids": ids, "attention_mask": mask, "max_new_tokens": max_new_tokens,
                                          "num_beams": 1})[0]


# --------------------------------------------------------------------------- 1. soak


def soak(_C, program, inputs, calls: int, max_new: int, slack_mb: float) -> dict:
    s = _C.Session(program, 1)
    every = max(1, calls // 50)
    samples = []
    t0 = time.perf_counter()
    for i in range(calls):
        ids, mask = inputs[i % len(inputs)]
        generate(s, ids, mask, max_new)
        if i % every == 0 or i == calls - 1:
            samples.append((i + 1, round(rss_mb(), 2)))
    seconds = time.perf_counter() - t0
    warm = next(r for n, r in samples if n > calls // 10) if calls >= 10 else samples[0][1]
    end = samples[-1][1]
    after = [r for n, r in samples if n > calls // 10] or [end]
    return {"calls": calls, "seconds": round(seconds, 2), "calls_per_second": round(calls / seconds, 1),
            "rss_mb_first": samples[0][1], "rss_mb_after_warmup": warm, "rss_mb_end": end,
            "rss_mb_max_after_warmup": max(after), "growth_after_warmup_mb": round(end - warm, 2),
            "slack_mb": slack_mb, "samples": samples, "ok": end - warm < slack_mb}


# --------------------------------------------------------------------------- 2+3. concurrency and churn


def concurrency(_C, program, inputs, threads: int, seconds: float, max_new: int, stall: float) -> dict:
    ref_session = _C.Session(program, 1)
    want = [generate(ref_session, ids, mask, max_new) for ids, mask in inputs]
    del ref_session

    stop = threading.Event()
    counts = [0] * threads
    last_done = [time.monotonic()] * threads
    mismatches, errors = [], []
    churn = {"sessions": 0, "mismatches": 0, "errors": []}

    def worker(k: int):
        s = _C.Session(program, 1)
        i = k  # threads start at different batches
        try:
            while not stop.is_set():
                j = i % len(inputs)
                got = generate(s, *inputs[j], max_new)
                if not np.array_equal(got, want[j]):
                    mismatches.append((k, j))
                counts[k] += 1
                last_done[k] = time.monotonic()
                i += 1
        except Exception as e:  # noqa: BLE001 - reported, and fails the run
            errors.append(f"thread {k}: {e!r}")

    def churner():
        i = 0
        try:
            while not stop.is_set():
                s = _C.Session(program, 1)
                j = i % len(inputs)
                if not np.array_equal(generate(s, *inputs[j], max_new), want[j]):
                    churn["mismatches"] += 1
                del s  # the last reference: the Session is destroyed here, while the others run
                churn["sessions"] += 1
                i += 1
        except Exception as e:  # noqa: BLE001
            churn["errors"].append(repr(e))

    pool = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(threads)]
    pool.append(threading.Thread(target=churner, daemon=True))
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    deadlock = None
    while time.perf_counter() - t0 < seconds:
        time.sleep(0.5)
        now = time.monotonic()
        stalled = [k for k in range(threads) if now - last_done[k] > stall]
        if stalled:
            deadlock = f"threads {stalled} finished no call for {stall} s"
            break
        if errors:
            break
    stop.set()
    for t in pool:
        t.join(timeout=stall)
    alive = [t.name for t in pool if t.is_alive()]
    if alive and not deadlock:
        deadlock = f"threads {alive} did not stop within {stall} s"
    elapsed = time.perf_counter() - t0
    ok = not mismatches and not errors and not deadlock and not churn["mismatches"] and not churn["errors"]
    return {"threads": threads, "seconds": round(elapsed, 1), "calls": sum(counts), "calls_per_thread": counts,
            "calls_per_second": round(sum(counts) / elapsed, 1), "distinct_inputs": len(inputs),
            "mismatches": len(mismatches), "errors": errors, "deadlock": deadlock,
            "churn_sessions_created_and_deleted": churn["sessions"], "churn_mismatches": churn["mismatches"],
            "churn_errors": churn["errors"],
            "cancel": "not tested: the runtime has no generation callback or cancel (Session.run runs to completion)",
            "ok": ok}


# --------------------------------------------------------------------------- 4. files changed under a loaded program

CHILD = r"""
import sys, numpy as np
from tensorvm import _C
path, max_new = sys.argv[1], int(sys.argv[2])
ids = np.array([[5, 6, 7, 0]], dtype=np.int64); mask = np.ones_like(ids)
p = _C.Program.load(path)
s = _C.Session(p, 1)
def gen(sess):
    return sess.run_named("generate", {"input_ids": ids, "attention_mask": mask, "max_new_tokens": max_new, "num_beams": 1})[0]
first = gen(s)
print("loaded", flush=True)
sys.stdin.readline()  # the parent changes the files now
try:
    again = gen(s)
    print("rerun:", "same" if np.array_equal(first, again) else "different", flush=True)
except Exception as e:
    print("rerun: error:", str(e).splitlines()[0][:200], flush=True)
try:
    _C.Program.load(path)
    print("reload: ok", flush=True)
except Exception as e:
    print("reload: error:", str(e).splitlines()[0][:200], flush=True)
"""


def _truncate(path: Path, keep: float):
    with open(path, "r+b") as f:
        f.truncate(int(path.stat().st_size * keep))


def _corrupt(path: Path):
    """Overwrites the second half of the file in place with a byte pattern (same size)."""
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(size // 2)
        f.write(bytes([0xFF]) * (size - size // 2))


def _replace(path: Path, data: bytes):
    """A new file renamed over the old one: the loaded mapping keeps the old inode."""
    tmp = path.with_suffix(".new")
    tmp.write_bytes(data)
    os.replace(tmp, path)


FILE_CASES = {
    "weights truncated to half in place": lambda d: _truncate(d / "weights.safetensors", 0.5),
    "weights truncated to 0 bytes in place": lambda d: _truncate(d / "weights.safetensors", 0.0),
    "weights corrupted in place (second half 0xFF)": lambda d: _corrupt(d / "weights.safetensors"),
    "weights replaced by rename with a truncated copy":
        lambda d: _replace(d / "weights.safetensors", (d / "weights.safetensors").read_bytes()[:1000]),
    "program.py truncated in place": lambda d: _truncate(d / "program.py", 0.5),
}


def file_swap(program_dir: Path, workdir: Path, max_new: int, cases=None) -> dict:
    env = dict(os.environ)
    results = {}
    for name in cases or FILE_CASES:
        change = FILE_CASES[name]
        d = workdir / "swap.tvm"
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(program_dir, d)
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(d), str(max_new)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        line = child.stdout.readline().strip()
        if line != "loaded":
            child.kill()
            results[name] = {"outcome": f"child failed before the change: {line} {child.stderr.read()[-300:]}",
                             "ok": False}
            continue
        change(d)
        try:
            out, err = child.communicate("go\n", timeout=120)
        except subprocess.TimeoutExpired:
            child.kill()
            out, err = child.communicate()
        rc = child.returncode
        lines = [x for x in out.splitlines() if x]
        if rc < 0:
            outcome = f"killed by {signal.Signals(-rc).name}" + (f" after: {'; '.join(lines)}" if lines else "")
        else:
            outcome = "; ".join(lines) if lines else f"exit {rc}: {err[-300:]}"
        # Pass: the process survives and a fresh load of a damaged file is an error, not a crash.
        results[name] = {"outcome": outcome, "exit": rc, "ok": rc == 0}
    return {"cases": results, "ok": all(r["ok"] for r in results.values())}


# --------------------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", type=Path, help="program directory (default: tiny-marian imported into a temp dir)")
    ap.add_argument("--quick", action="store_true", help="short version: 300 calls, 5 s on the threads (~20 s)")
    ap.add_argument("--calls", type=int, help="soak: generate calls (default 10000; --quick 300)")
    ap.add_argument("--seconds", type=float, help="concurrency: seconds (default 300; --quick 5)")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--rss-slack-mb", type=float, default=8.0)
    ap.add_argument("--stall-seconds", type=float, default=60.0)
    ap.add_argument("--parts", default="soak,concurrency,files", help="comma-separated subset of soak,concurrency,files")
    ap.add_argument("--out", type=Path, help="write the JSON report here")
    args = ap.parse_args(argv)
    calls = args.calls or (300 if args.quick else 10000)
    seconds = args.seconds or (5.0 if args.quick else 300.0)
    parts = set(args.parts.split(","))

    from tensorvm import _C

    with tempfile.TemporaryDirectory(prefix="tvm-soak-") as tmp:
        tmp = Path(tmp)
        program_dir = args.program or tiny_marian(tmp)
        meta = json.loads((program_dir / "meta.json").read_text()) if (program_dir / "meta.json").exists() else {}
        program = _C.Program.load(str(program_dir))
        inputs = batches(meta, seed=11, count=8)
        report = {"date": _dt.datetime.now().isoformat(timespec="seconds"), "cpu": cpu_name(),
                  "cores": os.cpu_count(), "program": str(args.program or "tiny-marian (fixture)"),
                  "max_new_tokens": args.max_new_tokens, "batch": int(inputs[0][0].shape[0])}
        if "soak" in parts:
            report["soak"] = soak(_C, program, inputs, calls, args.max_new_tokens, args.rss_slack_mb)
            print(f"soak: {json.dumps({k: v for k, v in report['soak'].items() if k != 'samples'})}", flush=True)
        if "concurrency" in parts:
            report["concurrency"] = concurrency(_C, program, inputs, args.threads, seconds, args.max_new_tokens,
                                                args.stall_seconds)
            print(f"concurrency: {json.dumps(report['concurrency'])}", flush=True)
        if "files" in parts:
            report["files"] = file_swap(program_dir, tmp, args.max_new_tokens)
            print(f"files: {json.dumps(report['files'])}", flush=True)
    ok = all(report[p]["ok"] for p in ("soak", "concurrency", "files") if p in report)
    report["ok"] = ok
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp_out = args.out.with_suffix(".tmp")
        tmp_out.write_text(json.dumps(report, indent=1) + "\n")
        os.replace(tmp_out, args.out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
