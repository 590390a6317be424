"""tensorvm against whisper.cpp and faster-whisper, side by side (issue 30, step 5).

    python bench/whisper_cpp_bench.py --shapes tiny,base --audio 30,300 --threads 2 --out w.json --md w.md
    python bench/whisper_cpp_bench.py --quick --strict      # smoke run (tests/python/test_bench_whisper_cpp.py)

One seeded random-weight WhisperForConditionalGeneration per shape (bench/whisper_bench.py's
checkpoint: no hub), converted for each engine: tensorvm's import_hf (f32, f16, int8, w8a8,
int4, w4a8); whisper.cpp's models/convert-h5-to-ggml.py (f32, f16) and its whisper-quantize
(q8_0, q5_0, q4_0), as pywhispercpp 1.5.1 vendors them (bench/whisper_cpp_build.sh);
CTranslate2's TransformersConverter for faster-whisper (float32, int8). The same espeak-ng
speech, 16 kHz mono, cut into 30-s clips: "30" is one clip, "300" ten consecutive ones
transcribed one after the other (tensorvm's long-form window loop is not on main yet, so
every engine gets the 5 minutes as ten independent 30-s windows). Greedy, no timestamps, no
temperature fallback, no conditioning on previous text, exactly --new-tokens tokens per window
where the engine allows it (below). Each engine runs in a fresh process of its own: audio in,
token ids out (each engine's own log-mel), timed end to end; peak RSS is that process's VmHWM.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.checkpoint import tool_home  # noqa: E402
from bench.whisper_bench import EOS, PROMPT, SPECIAL, VOCAB, checkpoint  # noqa: E402

F32_CONV = "GGML_ASSERT(src0->type == GGML_TYPE_F16)"
RATE, CLIP = 16000, 480000  # 30 s windows
TVM = {"f32": None, "f16": "f16", "int8": "int8", "w8a8": "w8a8", "int4": "int4", "w4a8": "w4a8"}
GGML = ("f32", "f16", "q8_0", "q5_0", "q4_0")
FW = ("float32", "int8")
ENGINES = ([f"tensorvm-{k}" for k in TVM] + [f"whisper.cpp-{k}" for k in GGML] + [f"faster-whisper-{k}" for k in FW])
# the rows each tensorvm row is measured against (matching precision)
PAIRS = {"f32": ("whisper.cpp-f32", "faster-whisper-float32"), "f16": ("whisper.cpp-f16", None),
         "int8": ("whisper.cpp-q8_0", "faster-whisper-int8"), "w8a8": ("whisper.cpp-q8_0", "faster-whisper-int8"),
         "int4": ("whisper.cpp-q4_0", None), "w4a8": ("whisper.cpp-q4_0", None)}
TEXT = ("The committee met on Tuesday morning to review the budget for the coming year. Several members "
        "raised concerns about the cost of the new library, which has grown by almost a third since the plans "
        "were first drawn up. The chair reminded everyone that the building will serve the town for fifty "
        "years, and that a cheaper design would need repairs much sooner. After a long discussion, they "
        "agreed to ask the architects for a second estimate and to meet again in two weeks. Meanwhile, the "
        "volunteers at the river clean up collected more than four hundred kilograms of rubbish, mostly "
        "plastic bottles, old tyres and a surprising number of shopping trolleys. ")


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def dir_mb(p: Path) -> float:
    p = Path(p)
    files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
    return round(sum(f.stat().st_size for f in files) / 2**20, 2)


# ---------------------------------------------------------------- preparation

def speech(cache: Path, seconds: int) -> Path:
    """At least `seconds` of espeak-ng speech at 16 kHz (f32 .npy), cached."""
    out = cache / f"speech-{seconds}s.npy"
    if out.is_file():
        return out
    if shutil.which("espeak-ng") is None:
        raise SystemExit("espeak-ng not found (apt-get install espeak-ng)")
    import soundfile
    import soxr

    cache.mkdir(parents=True, exist_ok=True)
    wav = cache / "speech.wav"
    reps = max(1, int(np.ceil(seconds / 30)))  # TEXT lasts about 40 s
    subprocess.run(["espeak-ng", "-v", "en", "-s", "165", "-w", str(wav), TEXT * reps], check=True,
                   capture_output=True)
    x, sr = soundfile.read(str(wav), dtype="float32")
    x = soxr.resample(x, sr, RATE).astype(np.float32) if sr != RATE else x  # python-soxr HQ, as tensorvm's reader
    if len(x) < seconds * RATE:
        x = np.tile(x, int(np.ceil(seconds * RATE / len(x))))
    np.save(out, x[: seconds * RATE])
    return out


def clips(audio: np.ndarray, seconds: int) -> np.ndarray:
    """[n, 480000]: `seconds` of audio as consecutive 30-s windows."""
    n = max(1, seconds // 30)
    return np.ascontiguousarray(audio[: n * CLIP].reshape(n, CLIP))


def token_names() -> list[str]:
    """A stub vocabulary (the checkpoints have no tokenizer): id i is named by its decimal
    string, id 220 is GPT-2's space (whisper.cpp's suppress_blank looks it up), Whisper's
    special tokens and timestamps by their own names."""
    names = [SPECIAL.get(i, str(i)) for i in range(50364)]
    names[220] = "\u0120"
    return names + [f"<|{(i - 50364) * 0.02:.2f}|>" for i in range(50364, VOCAB)]


def prepare_checkpoint(shape: str, cache: Path) -> Path:
    ckpt = cache / f"whisper-{shape}-random"
    if not (ckpt / "config.json").is_file():
        checkpoint(shape, ckpt)
    # tensorvm's long-form loop needs the timestamp ids (the released checkpoints have them)
    gen = json.loads((ckpt / "generation_config.json").read_text())
    if gen.get("no_timestamps_token_id") != PROMPT[-1]:
        gen["no_timestamps_token_id"] = PROMPT[-1]
        (ckpt / "generation_config.json").write_text(json.dumps(gen, indent=2))
    return ckpt


def prepare_tensorvm(ckpt: Path, cache: Path, scheme: str) -> Path:
    import tensorvm

    out = cache / f"tensorvm-{scheme}.tvm"
    meta = out / "meta.json"
    if not meta.is_file() or "no_timestamps_token_id" not in json.loads(meta.read_text()):
        tensorvm.import_hf(ckpt, out, quantize=TVM[scheme])
    return out


def whisper_cpp_home() -> Path:
    """Where bench/whisper_cpp_build.sh puts whisper.cpp's source and whisper-quantize."""
    return tool_home("TENSORVM_WHISPER_CPP", "whisper.cpp")


def whisper_cpp_source() -> Path:
    src = whisper_cpp_home() / "pywhispercpp-1.5.1" / "whisper.cpp"
    if not (src / "models" / "convert-h5-to-ggml.py").is_file():
        raise FileNotFoundError(f"whisper.cpp's convert-h5-to-ggml.py not found under {src} "
                                "(bash bench/whisper_cpp_build.sh)")
    return src


def prepare_ggml(ckpt: Path, cache: Path, kind: str) -> Path:
    """ggml-<kind>.bin. f32/f16: convert-h5-to-ggml.py, run as shipped but for one line: it
    rounds every tensor through f16 before writing f32, so its "f32" file holds f16 values;
    that cast is skipped for f32 (the f16 file is unchanged). whisper.cpp 1.8.5 cannot run an
    f32 file on the CPU anyway (the row says so): an f32 model has f32 conv kernels, and
    ggml_conv_1d's im2col asserts an f16 one (GGML_ASSERT(src0->type == GGML_TYPE_F16),
    ggml-cpu/ops.cpp). The quantized ones: whisper.cpp's whisper-quantize from the f16 file,
    as whisper.cpp's README does it (its loader wants the conv kernels f16 in them)."""
    out = cache / f"ggml-{kind}.bin"
    if out.is_file():
        return out
    if kind in ("f32", "f16"):
        src = whisper_cpp_source()
        work = cache / f"ggml-convert-{kind}"
        if work.exists():
            shutil.rmtree(work)
        model, assets = work / "model", work / "whisper" / "whisper" / "assets"
        model.mkdir(parents=True)
        assets.mkdir(parents=True)
        for f in ("config.json", "model.safetensors", "generation_config.json"):
            os.symlink((ckpt / f).resolve(), model / f)
        names = token_names()
        (model / "vocab.json").write_text(json.dumps({names[i]: i for i in range(EOS)}))
        (model / "added_tokens.json").write_text(json.dumps({names[i]: i for i in range(EOS, VOCAB)}))
        from transformers import WhisperFeatureExtractor

        mel = WhisperFeatureExtractor(feature_size=80).mel_filters.T.astype(np.float32)  # [80, 201]
        np.savez(assets / "mel_filters.npz", mel_80=mel)
        script = (src / "models" / "convert-h5-to-ggml.py").read_text()
        old = "    data = data.astype(np.float16)\n"
        assert script.count(old) == 1, "convert-h5-to-ggml.py changed: its f16 cast is not where expected"
        script = script.replace(old, "    data = data.astype(np.float16) if use_f16 else data\n")
        (work / "convert.py").write_text(script)
        cmd = [sys.executable, str(work / "convert.py"), str(model), str(work / "whisper"), str(work)]
        r = subprocess.run(cmd + (["use-f32"] if kind == "f32" else []), capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"convert-h5-to-ggml.py failed: {r.stderr[-2000:]}")
        os.replace(work / ("ggml-model-f32.bin" if kind == "f32" else "ggml-model.bin"), out)
        shutil.rmtree(work)
        return out
    quantize = whisper_cpp_home() / "build" / "bin" / "whisper-quantize"
    if not quantize.is_file():
        raise FileNotFoundError(f"whisper.cpp's whisper-quantize not built ({quantize}: bash bench/whisper_cpp_build.sh)")
    f16 = prepare_ggml(ckpt, cache, "f16")
    r = subprocess.run([str(quantize), str(f16), str(out) + ".tmp", kind], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"whisper-quantize {kind} failed: {(r.stderr or r.stdout)[-2000:]}")
    os.replace(str(out) + ".tmp", out)
    return out


def prepare_faster_whisper(ckpt: Path, cache: Path, kind: str, threads: int) -> Path:
    """CTranslate2's conversion (bench/whisper_bench.py's stub vocabulary) plus a tokenizer.json
    faster-whisper reads instead of fetching openai's from the hub."""
    out = cache / f"ct2-{kind}"
    if (out / "tokenizer.json").is_file():
        return out
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel

    from bench.whisper_bench import ctranslate2_model

    names = token_names()
    ctranslate2_model(ckpt, out, kind, threads, names)  # all 51865 names: multilingual, so <|en|> is in the prompt
    Tokenizer(WordLevel({t: i for i, t in enumerate(names)}, unk_token="<|endoftext|>")).save(str(out / "tokenizer.json"))
    return out


MODULES = {"tensorvm": "tensorvm", "whisper.cpp": "pywhispercpp", "faster-whisper": "faster_whisper"}


def prepare(engine: str, ckpt: Path, cache: Path, threads: int) -> Path:
    """The engine's model file or directory, made and cached; ImportError without its package."""
    import importlib.util

    family, kind = engine.rsplit("-", 1)
    if importlib.util.find_spec(MODULES[family]) is None:
        raise ImportError(f"{MODULES[family]} not installed (pip install -r bench/requirements.txt)")
    if family == "tensorvm":
        return prepare_tensorvm(ckpt, cache, kind)
    if family == "whisper.cpp":
        return prepare_ggml(ckpt, cache, kind)
    return prepare_faster_whisper(ckpt, cache, kind, threads)


# ---------------------------------------------------------------- workers

def rss_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


class TensorVM:
    """Program.run("transcribe"): log_mel, encoder and greedy decoding in one C++ call; the
    checkpoint's suppress_tokens=[EOS] makes exactly new_tokens tokens."""

    def __init__(self, model, threads, new_tokens):
        import tensorvm

        self.prog, self.n = tensorvm.load(model, num_threads=threads), new_tokens
        self.prompt = np.array([PROMPT], np.int64)

    def __call__(self, clip):
        if len(clip) > CLIP:  # --long-form: the program's own window loop (no timestamps: whole windows)
            # transcribe(long_form=True) itself: its tail decodes text, and these checkpoints have
            # no tokenizer, so the loop is called with the segments (token ids) kept
            segs = self.prog._transcribe_long([clip], None, None, self.prompt, self.n, 1, True, {}, None)[0]
            return [t for s in segs for t in s["tokens"]]
        seq = np.asarray(self.prog.run("transcribe", clip[None, :], self.prompt, self.n, 1))
        return seq[0, len(PROMPT):].tolist()


class WhisperCpp:
    """pywhispercpp's Model (whisper.cpp's whisper_full): greedy at temperature 0 with no
    fallback (temperature_inc 0, entropy/logprob/no-speech thresholds off), no timestamps,
    no context carried between calls, suppress_blank off. max_tokens = new_tokens - 1 ends
    the window after new_tokens tokens (whisper.cpp stops at step i >= max_tokens and keeps
    that token). whisper.cpp has no way to ban EOS cheaply (suppress_regex runs a std::regex
    over the whole vocabulary every step; pywhispercpp's logits callback gets no writable
    logits), so it may stop earlier: the tokens column says how many it made."""

    def __init__(self, model, threads, new_tokens):
        import _pywhispercpp as pw
        from pywhispercpp.model import Model

        self.pw = pw
        self.model = Model(str(model), redirect_whispercpp_logs_to=None, n_threads=threads, language="en",
                           print_progress=False, print_realtime=False, print_timestamps=False, no_context=True,
                           no_timestamps=True, single_segment=True, suppress_blank=False, temperature=0.0,
                           temperature_inc=0.0, entropy_thold=-1.0, logprob_thold=-1e9, no_speech_thold=1.0,
                           max_tokens=new_tokens - 1)

    def __call__(self, clip):
        self.model.transcribe(clip)
        ctx, pw = self.model._ctx, self.pw
        ids = [pw.whisper_full_get_token_id(ctx, s, j)
               for s in range(pw.whisper_full_n_segments(ctx)) for j in range(pw.whisper_full_n_tokens(ctx, s))]
        return [t for t in ids if t <= EOS]  # text tokens (and EOS if it stopped there)


class Multilingual:
    """A CTranslate2 Whisper that says it is multilingual, everything else passed through."""

    is_multilingual = True

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)


class FasterWhisper:
    """faster_whisper.WhisperModel.transcribe: beam_size 1, temperature 0 alone (no fallback),
    thresholds off, no conditioning, no timestamps, no VAD, suppress_tokens=[EOS],
    cpu_threads=threads, num_workers 1. CTranslate2's Whisper generate decodes at most
    min(max_length / 2, max_length - prompt) tokens (models/whisper.cc: Whisper's sample_len of
    n_text_ctx / 2), and faster-whisper passes max_length = len(prompt) + max_new_tokens: so
    max_new_tokens = 2 x new_tokens - 4 gives new_tokens tokens."""

    def __init__(self, model, threads, new_tokens):
        from faster_whisper import WhisperModel

        kind = Path(model).name.split("-", 1)[1]
        self.model = WhisperModel(str(model), device="cpu", compute_type=kind, cpu_threads=threads, num_workers=1)
        self.n = new_tokens
        if not self.model.model.is_multilingual:
            # CTranslate2 4.8.5 counts 51864 of the stub vocabulary's 51865 names (num_languages
            # says so; not investigated) and calls the model English-only, so faster-whisper would
            # prompt <|startoftranscript|> <|notimestamps|> alone: it is told the truth
            self.model.model = Multilingual(self.model.model)

    def __call__(self, clip):
        segs, _ = self.model.transcribe(clip, language="en", task="transcribe", beam_size=1, best_of=1,
                                        temperature=0.0, compression_ratio_threshold=None, log_prob_threshold=None,
                                        no_speech_threshold=None, condition_on_previous_text=False,
                                        suppress_blank=False, suppress_tokens=[EOS], without_timestamps=True,
                                        vad_filter=False, max_new_tokens=2 * self.n - len(PROMPT))
        return [t for s in segs for t in s.tokens]


def worker(spec: dict) -> dict:
    """One engine in this (fresh) process: load, one untimed warm-up window, then `reps`
    passes over every clip set; wall and CPU seconds per pass, tokens, RSS."""
    rss_start = rss_mb("VmRSS")
    family = spec["engine"].rsplit("-", 1)[0]
    cls = {"tensorvm": TensorVM, "whisper.cpp": WhisperCpp, "faster-whisper": FasterWhisper}[family]
    t = time.perf_counter()
    run = cls(spec["model"], spec["threads"], spec["new_tokens"])
    res = {"load_s": time.perf_counter() - t, "rss_before_load_MB": rss_start}
    if family == "whisper.cpp":  # the wheel's ggml build: which instruction sets, OpenMP
        res["system_info"] = run.pw.whisper_print_system_info()
    audio = np.load(spec["audio"])
    sets = {str(s): audio[None, : s * RATE] if spec["long_form"] and s > 30 else clips(audio, s)
            for s in spec["seconds"]}
    run(sets[str(spec["seconds"][0])][0])  # warm-up
    for key, c in sets.items():
        wall, cpu, tokens = [], [], None
        for _ in range(spec["reps"]):
            t, p = time.perf_counter(), time.process_time()
            out = [run(x) for x in c]
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - p)
            tokens = tokens or out
        res[key] = {"wall_s": wall, "cpu_s": cpu, "tokens": tokens, "median_s": float(np.median(wall))}
    res["peak_rss_MB"] = rss_mb("VmHWM")
    return res


def run_worker(spec: dict, timeout: float) -> dict:
    # GGML_NO_BACKTRACE: ggml's abort (whisper.cpp f32) otherwise forks a debugger for a backtrace,
    # which hung the worker once under load
    env = dict(os.environ, OMP_NUM_THREADS=str(spec["threads"]), MKL_NUM_THREADS=str(spec["threads"]),
               GGML_NO_BACKTRACE="1")
    r = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], capture_output=True, text=True,
                       timeout=timeout, env=env, cwd=ROOT)
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    if r.returncode or not lines:
        raise RuntimeError(f"worker exited {r.returncode}: {(r.stderr or r.stdout)[-2000:]}")
    return json.loads(lines[-1])


# ---------------------------------------------------------------- report

def agreement(got: list, want: list) -> dict:
    n = min(len(got), len(want))
    first = next((i for i in range(n) if got[i] != want[i]), None)
    return {"exact": got == want, "equal_prefix": n if first is None else first, "of": len(want)}


def versions() -> dict:
    """The packages measured, and the commit of tensorvm's tree."""
    from importlib import metadata

    out = {}
    for pkg in ("pywhispercpp", "faster-whisper", "ctranslate2", "transformers"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    out["tensorvm_commit"] = r.stdout.strip() or None
    return out


def load_avg() -> float:
    return round(os.getloadavg()[0], 2)


def markdown(report: dict) -> str:
    s = report["settings"]
    out = [f"# Whisper: tensorvm vs whisper.cpp vs faster-whisper ({report['date']})", "",
           f"CPU: {report['cpu']}, {s['threads']} threads; greedy, {s['new_tokens']} tokens per 30-s window, "
           f"medians of {s['reps']} pass(es); "
           + ("audio over 30 s in one call to each engine's own window loop" if s.get("long_form")
              else "audio over 30 s as separate 30-s clips")
           + f"; load average {report['load'][0]} before, {report['load'][1]} after"
           + (" (**under load**: other processes were running)" if max(report["load"]) > s["threads"] else ""),
           "", "versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()), ""]
    for shape, rows in report["shapes"].items():
        secs = s["seconds"]
        out += [f"## whisper-{shape}-shaped, random weights", "",
                "| engine | file MB | load s | " + " | ".join(f"{x} s audio: s" for x in secs)
                + " | peak RSS MB | tokens / window | f32 agreement (1st window) | x whisper.cpp | x faster-whisper |",
                "|---|---|---|" + "---|" * len(secs) + "---|---|---|---|---|"]
        for name, r in rows.items():
            if r.get("status") != "ok":
                out.append(f"| {name} | {r.get('status')}: {r.get('error', '')[:120]} |")
                continue
            times = " | ".join(f"{r[str(x)]['median_s']:.2f}" for x in secs)
            per_call = {str(x): (x // 30 if s.get("long_form") else 1) for x in secs}  # windows per call
            toks = sorted({round(len(t) / per_call[str(x)], 1) for x in secs for t in r[str(x)]["tokens"]})
            ag = r.get("vs_tensorvm_f32")
            ag = "-" if ag is None else ("exact" if ag["exact"] else f"{ag['equal_prefix']}/{ag['of']}")
            ratios = [" / ".join(f"{v:.2f}x" for v in r.get("ratios", {}).get(k, [])) or "-"
                      for k in ("whisper.cpp", "faster-whisper")]
            out.append(f"| {name} | {r['file_MB']} | {r['load_s']:.2f} | {times} | {r['peak_rss_MB']:.0f} | "
                       f"{','.join(map(str, toks))} | {ag} | {ratios[0]} | {ratios[1]} |")
        out.append("")
    out += ["x: the other engine's time / tensorvm's at the matching precision (> 1: tensorvm faster), one per "
            "audio length; f32 against whisper.cpp f32 and faster-whisper float32, f16 against whisper.cpp f16, "
            "int8 and w8a8 against q8_0 and faster-whisper int8, int4 and w4a8 against q4_0.", ""]
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="tiny,base")
    ap.add_argument("--audio", default="30,300", help="seconds of speech per row (multiples of 30)")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("TENSORVM_BENCH_CACHE", ROOT / "bench/.cache")))
    ap.add_argument("--out", type=Path, default=Path("whisper_cpp_bench.json"))
    ap.add_argument("--md", type=Path)
    ap.add_argument("--quick", action="store_true", help="toy shape, 30 s and 60 s, 8 tokens, 1 pass")
    ap.add_argument("--strict", action="store_true", help="exit 1 when an available engine fails")
    ap.add_argument("--prepare-only", action="store_true")
    ap.add_argument("--long-form", action="store_true",
                    help="audio over 30 s in one call to each engine's own window loop (no timestamps: each "
                         "moves by whole windows), not as separate 30-s clips")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(json.loads(a.worker))))
        return 0
    if a.quick:
        a.shapes, a.audio, a.new_tokens, a.reps = "toy", "30,60", 8, 1
    seconds = [int(x) for x in a.audio.split(",")]
    if any(x % 30 for x in seconds):
        raise SystemExit("--audio: multiples of 30 s")
    engines = a.engines.split(",")
    audio = speech(a.cache / "audio", max(seconds))
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": cpu_name(), "load": [load_avg()],
              "versions": versions(),
              "settings": {"threads": a.threads, "new_tokens": a.new_tokens, "reps": a.reps, "seconds": seconds,
                           "long_form": a.long_form,
                           "windows": {str(x): max(1, x // 30) for x in seconds}},
              "shapes": {}}
    failed = False
    for shape in a.shapes.split(","):
        cache = a.cache / f"whisper-cpp-{shape}"
        ckpt = prepare_checkpoint(shape, cache)
        rows = report["shapes"][shape] = {}
        for name in engines:
            row = rows[name] = {}
            try:
                model = prepare(name, ckpt, cache, a.threads)
            except (FileNotFoundError, ImportError) as e:
                row.update(status="unavailable", error=str(e))
                continue
            except Exception as e:  # noqa: BLE001  (reported, the other engines still run)
                row.update(status="error", error=f"prepare: {e}")
                failed = True
                continue
            row["file_MB"] = dir_mb(model)
            if a.prepare_only:
                row["status"] = "prepared"
                continue
            spec = {"engine": name, "model": str(model), "threads": a.threads, "new_tokens": a.new_tokens,
                    "reps": a.reps, "seconds": seconds, "audio": str(audio), "long_form": a.long_form}
            try:
                row.update(run_worker(spec, timeout=3600), status="ok")
            except Exception as e:  # noqa: BLE001
                if name == "whisper.cpp-f32" and F32_CONV in str(e):
                    row.update(status="unsupported", error="whisper.cpp cannot run f32 models on the CPU: "
                                                           f"{F32_CONV} in ggml_conv_1d's im2col")
                else:
                    row.update(status="error", error=str(e))
                    failed = True
            print(f"{shape} {name}: {row.get('status')} {row.get(str(seconds[0]), {}).get('median_s', '')}",
                  flush=True)
        want = rows.get("tensorvm-f32", {})
        for name, row in rows.items():
            if row.get("status") != "ok":
                continue
            if want.get("status") == "ok":
                row["vs_tensorvm_f32"] = agreement(row[str(seconds[0])]["tokens"][0],
                                                   want[str(seconds[0])]["tokens"][0])
            family, kind = name.rsplit("-", 1)
            if family == "tensorvm":
                row["ratios"] = {}
                for other in PAIRS[kind]:
                    o = rows.get(other or "", {})
                    if o.get("status") == "ok":
                        row["ratios"][other.rsplit("-", 1)[0]] = [o[str(x)]["median_s"] / row[str(x)]["median_s"]
                                                                  for x in seconds]
                if rows.get(PAIRS[kind][0], {}).get("status") == "ok":
                    row["rss_vs_whisper_cpp"] = row["peak_rss_MB"] / rows[PAIRS[kind][0]]["peak_rss_MB"]
    report["load"].append(load_avg())
    a.out.write_text(json.dumps(report, indent=1))
    md = markdown(report)
    if a.md:
        a.md.write_text(md)
    print(md)
    return 1 if (failed and a.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
