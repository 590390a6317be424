"""llama.cpp as an engine of bench/decoder_only_bench.py: its own binaries, its own timer.

Binaries (llama-bench, llama-quantize, llama-completion) and the converter
(convert_hf_to_gguf.py + gguf-py + conversion/, from the same source) are looked up in
$TENSORVM_LLAMA_CPP, else $TENSORVM_BENCH_CACHE/llama.cpp, else bench/.cache/llama.cpp
(`bin/NAME` or `NAME` directly inside). bench/llama_cpp_build.sh builds them there from the
llama-cpp-python sdist. Without them the engines are "unavailable", not an error.

* prepare: the checkpoint converted by bench/engines/gguf_convert.py (the converter
  unchanged, a vocabulary of one character per id) to f32 and f16 GGUF files, then
  `llama-quantize` f32 -> q8_0 and q4_0; cached beside the checkpoint.
* timing (`measure`, not `generate`): `llama-bench -p P -n 0` (prefill: the prompt in one
  batch) and `llama-bench -p 0 -n N -d P` (decode: N tokens after a context of P), -r reps,
  -t threads, JSON samples. Peak RSS: VmHWM of each llama-bench process, polled while it
  runs (not ru_maxrss, which carries the parent's RSS over a fork).
* tokens: `llama-completion` greedy (--temp 0 --top-k 1, seed 0), EOS banned (--ignore-eos
  and a -inf bias on every other end id), the prompt given as its characters, so it reads the
  very ids every engine gets; the generated characters map back to ids. The f32 row's are
  made with flash attention off (its CPU kernel rounds through f16); those of the default,
  timed, configuration are kept beside (tokens_flash_attn_default).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..checkpoint import tool_home
from .base import EngineUnavailable
from .decoder_only import DecoderEngine, special_ids
from .gguf_convert import pieces

BINARIES = ("llama-bench", "llama-quantize", "llama-completion")
# engine name suffix -> (GGUF type, precision label of the benchmark)
TYPES = {"f32": "float32", "f16": "f16", "q8_0": "q8_0", "q4_0": "q4_0"}


def home() -> Path:
    return tool_home("TENSORVM_LLAMA_CPP", "llama.cpp")


def binary(name: str) -> Path:
    """The path of one llama.cpp binary, or EngineUnavailable saying where it was looked for."""
    root = home()
    for p in (root / "bin" / name, root / name):
        if p.is_file() and os.access(p, os.X_OK):
            return p
    raise EngineUnavailable(f"llama.cpp not found: no {name} in {root} (bash bench/llama_cpp_build.sh builds it; "
                            "or set TENSORVM_LLAMA_CPP)")


def converter_dir() -> Path:
    root = home()
    if not (root / "convert_hf_to_gguf.py").is_file():
        raise EngineUnavailable(f"llama.cpp's convert_hf_to_gguf.py not found in {root}")
    return root


def _run(cmd: list, timeout: float = 3600) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, errors="replace", timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{Path(str(cmd[0])).name} exited {r.returncode}: {(r.stderr or r.stdout)[-1500:]}")
    return r


def run_polled(cmd: list, timeout: float = 3600) -> tuple[str, str, float]:
    """stdout, stderr and peak RSS (MiB, VmHWM polled every 10 ms) of `cmd`."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=err, text=True)
        status, peak, t0 = Path(f"/proc/{p.pid}/status"), 0.0, time.monotonic()
        while p.poll() is None:
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) / 1024)
            except (OSError, ValueError):
                pass
            if time.monotonic() - t0 > timeout:
                p.kill()
                p.wait()
                raise RuntimeError(f"{Path(str(cmd[0])).name} ran past {timeout} s")
            time.sleep(0.01)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if p.returncode != 0:
        raise RuntimeError(f"{Path(str(cmd[0])).name} exited {p.returncode}: {(stderr or stdout)[-1500:]}")
    return stdout, stderr, peak


def gguf_weight_bytes(path: Path) -> dict:
    """Bytes of every tensor in a GGUF file, and those one batch-1 decode step reads: all but
    the position table and, when an output matrix exists, the token embedding (read a row at
    a time); a tied model has no output.weight and reads token_embd whole."""
    sys.path.insert(0, str(converter_dir() / "gguf-py"))
    import gguf

    sizes = {t.name: int(t.n_bytes) for t in gguf.GGUFReader(str(path)).tensors}
    skip = {"position_embd.weight"} | ({"token_embd.weight"} if "output.weight" in sizes else set())
    return {"total": sum(sizes.values()), "per_step": sum(v for k, v in sizes.items() if k not in skip)}


class LlamaCpp(DecoderEngine):
    external_timing = True  # the harness calls measure(), not generate()

    def __init__(self, gguf_type: str):
        self.gguf_type = gguf_type
        self.precision = TYPES[gguf_type]
        self.name = f"llama.cpp-{gguf_type}"

    def model_path(self, cache_dir: Path) -> Path:
        return Path(cache_dir) / f"llama.cpp-{self.gguf_type}.gguf"

    def files(self, checkpoint_dir: Path, cache_dir: Path) -> list[Path]:
        return [self.model_path(cache_dir)]

    def step_bytes(self, checkpoint_dir, cache_dir):
        return gguf_weight_bytes(self.model_path(cache_dir))["per_step"], True

    def prepare(self, checkpoint_dir, cache_dir):
        for b in BINARIES:
            binary(b)
        conv = converter_dir()
        out = self.model_path(cache_dir)
        stamp = Path(f"{out}.stamp")
        want = f"{Path(checkpoint_dir).resolve()} {conv.resolve()}\n"
        if out.is_file() and stamp.is_file() and stamp.read_text() == want:
            return {"cached": True, "convert_s": 0.0}
        t0 = time.perf_counter()
        if self.gguf_type in ("f32", "f16"):
            tmp = Path(f"{out}.tmp")
            _run([sys.executable, Path(__file__).with_name("gguf_convert.py"), conv, checkpoint_dir, tmp,
                  self.gguf_type])
        else:  # quantized from the f32 file (prepared first: the harness lists f32 before)
            src = LlamaCpp("f32")
            src.prepare(checkpoint_dir, cache_dir)
            tmp = Path(f"{out}.tmp")
            _run([binary("llama-quantize"), src.model_path(cache_dir), tmp, self.gguf_type.upper(), "2"])
        os.replace(tmp, out)
        stamp.write_text(want)
        return {"cached": False, "convert_s": round(time.perf_counter() - t0, 2)}

    def imports(self):
        binary("llama-bench")

    def load(self, checkpoint_dir, cache_dir, threads):
        self.checkpoint_dir, self.cache_dir, self.threads = Path(checkpoint_dir), Path(cache_dir), threads
        self.model = self.model_path(cache_dir)
        if not self.model.is_file():
            raise RuntimeError(f"{self.name}: {self.model} missing (the prepare step did not make it)")

    def _bench(self, reps: int, *args) -> tuple[list[dict], float]:
        stdout, _, peak = run_polled([binary("llama-bench"), "-m", self.model, "-t", self.threads, "-r", reps,
                                      "-o", "json", *args])
        return json.loads(stdout), peak

    def measure(self, res: dict, ids: np.ndarray, new_tokens: int, reps: int) -> None:
        """Fills res as the harness's measure does for the other engines: first_s (prefill
        seconds per run), decode_s (seconds per decode token per run), tokens, peak RSS."""
        p = len(ids)
        pre, peak_p = self._bench(reps, "-p", p, "-n", 0)
        dec, peak_d = self._bench(reps, "-p", 0, "-n", new_tokens, "-d", p)
        res["first_s"] = [ns / 1e9 for ns in pre[0]["samples_ns"]]
        res["decode_s"] = [ns / 1e9 / new_tokens for ns in dec[0]["samples_ns"]]
        res["all_s"], res["first_cpu_s"] = [], []
        res["tokens"] = self.greedy(ids, 1 + new_tokens).tolist()
        if self.precision == "float32":
            # llama.cpp's CPU flash attention (on by default: "auto") rounds through f16, and on
            # random weights that flips a close argmax (GPT-2-124M: from token 52 of 65). The
            # f32 row's tokens, checked exactly, come without it; those of the timed default
            # configuration are kept beside, their agreement reported.
            res["tokens_flash_attn_default"] = res["tokens"]
            res["tokens"] = self.greedy(ids, 1 + new_tokens, "-fa", "off").tolist()
        res["child_peak_rss_MB"] = max(peak_p, peak_d)
        res["deterministic"] = True  # one greedy run: not checked run to run
        res["status"] = "ok"
        res["info"] = {"llama_bench": {k: pre[0].get(k) for k in ("build_commit", "build_number", "cpu_info",
                                                                  "backends", "n_threads", "type_k", "type_v",
                                                                  "n_batch", "n_ubatch", "flash_attn",
                                                                  "model_type", "model_size", "model_n_params")},
                       "binaries": str(binary("llama-bench").parent)}

    def greedy(self, ids: np.ndarray, new_tokens: int, *extra) -> np.ndarray:
        vocab, _, _ = special_ids(self.checkpoint_dir)
        chars = pieces(vocab)
        index = {c: i for i, c in enumerate(chars)}
        gen = json.loads((self.checkpoint_dir / "generation_config.json").read_text())
        eos = gen.get("eos_token_id")
        bias = []
        for e in (eos if isinstance(eos, list) else [eos] if eos is not None else []):
            bias += ["-l", f"{e}-inf"]
        # llama-completion prints through llama.cpp's asynchronous logger and returns without
        # flushing it: on a busy machine the last tokens can be lost at exit (seen 1 run in ~10
        # under load). It is asked for a few more tokens than needed (greedy: the same prefix),
        # and run again when still short.
        extra_tokens = 8
        with tempfile.TemporaryDirectory(prefix="tvm-llama-") as tmp:
            prompt = Path(tmp) / "prompt.txt"
            prompt.write_text("".join(chars[i] for i in ids.tolist()), encoding="utf-8")
            for _ in range(5):
                r = _run([binary("llama-completion"), "-m", self.model, "-f", prompt, "-n", new_tokens + extra_tokens,
                          "--ignore-eos", *bias, "--temp", 0, "--top-k", 1, "-s", 0, "-no-cnv",
                          "--no-display-prompt", "--special", "--simple-io", "-t", self.threads,
                          "-c", max(256, len(ids) + new_tokens + extra_tokens + 8), "--no-warmup", *extra])
                out = self._ids(r.stdout, index)
                if len(out) >= new_tokens:
                    break
        if len(out) < new_tokens:
            raise RuntimeError(f"{self.name}: llama-completion printed {len(out)} tokens in 5 runs, asked for "
                               f"{new_tokens}")
        return np.asarray(out[:new_tokens], dtype=np.int64)

    def _ids(self, stdout: str, index: dict) -> list[int]:
        out = []
        for m in re.finditer(r"<\|special_(\d+)\|>|[^\n]", stdout):
            if m.group(0) == "\ufffd":  # a character cut by the lost tail (see greedy)
                break
            if m.group(1) is not None:
                out.append(int(m.group(1)))
            elif m.group(0) in index:
                out.append(index[m.group(0)])
            else:
                raise RuntimeError(f"{self.name}: llama-completion printed {m.group(0)!r}, no token of the vocabulary")
        return out


ENGINES = {f"llama.cpp-{t}": (lambda t=t: LlamaCpp(t)) for t in TYPES}
