#!/usr/bin/env python3
"""Text in, text out in WebAssembly (.ci/wasm): the demo's trained tiny Marian translates
typed English the same, character for character, natively and in WebAssembly under Node.

The program is the README's main job's (examples/text_demo.py: sentencepiece trained on the
toy number-words corpus, a small Marian trained for --train-seconds, imported with its
tokenizer); it is trained once into --work and reused. For greedy, beam 4 and seeded
sampling, `tensorvm-run PROGRAM translate --text-file in.txt` natively gives the expected
lines; then
  1. `node tensorvm-run.js PROGRAM translate ...` (the WebAssembly command line, with the text
     library built from source: sentencepiece, PCRE2) must print the same, per --run;
  2. web/test_node.js loads the directory through the C API (loadFiles, tvm_load_dir) and
     tvm_translate must return the same text, its streamed pieces adding up to it, and
     hostile text (none, invalid UTF-8, huge, no tokenizer ...) must give errors, per build;
  3. PCRE2: byte-level BPE tokenizers with regex pre-tokenizers (GPT-2's, Llama 3's), trained
     here, must tokenize varied lines to the native ids (the first --run);
  4. Whisper: a tiny random Whisper with its tokenizer transcribes a noise clip to the native
     text, from a WAV (the first --run) and from float samples through tvm_transcribe (the
     first C API build).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))  # wasm-generate.py's imports
# .ci/wasm-generate.py's run_test_node (its file name is no module name).
_spec = importlib.util.spec_from_file_location("wasm_generate", ROOT / ".ci" / "wasm-generate.py")
WASM_GENERATE = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(WASM_GENERATE)

# Unseen orders of the corpus's words, punctuation and case it never saw, characters outside
# its vocabulary (byte fallback or <unk>), an empty line and a lone number.
SENTENCES = ["I have twenty-one cats.", "We see seventy-three dogs.", "There are ninety-nine books.",
             "I have forty-four apples.", "", "we SEE two friends!", "Le chat ... «très» heureux!", "eighty"]
SETTINGS = [{"num_beams": 1}, {"num_beams": 4},
            {"do_sample": "true", "seed": 1234, "top_k": 8, "temperature": 0.9}]


def ensure_program(work: Path, seconds: float) -> Path:
    prog = work / "numbers" / "numbers.tvm"
    if (prog / "meta.json").is_file() and (prog / "tokenizer").is_dir():
        return prog
    sys.path.insert(0, str(ROOT / "examples"))
    import text_demo

    t0 = time.perf_counter()
    text_demo.main(["--out", str(work / "numbers"), "--seconds", str(seconds)])
    print(f"wasm-text: trained and imported {prog} ({time.perf_counter() - t0:.0f} s)")
    return prog


def check_pcre2_tokenizers(args, runs: list) -> int:
    """PCRE2 in WebAssembly: byte-level BPE tokenizers whose pre-tokenizers are regexes (GPT-2's,
    Llama 3's with Unicode properties) trained here (tests/python/text_fixtures.py) in
    tokenizer-only programs; `tokenize` on varied lines (accents, CJK, emoji, odd spaces) must
    give the native ids under Node. Returns the number of failures."""
    sys.path.insert(0, str(ROOT / "tests" / "python"))
    import text_fixtures as tf

    lines = args.work / "tricky.txt"
    lines.write_text("\n".join(s for s in tf.tricky_lines(120, seed=3) if "\n" not in s) + "\n", encoding="utf-8")
    failures = 0
    for style, model_type in (("gpt2", "gpt2"), ("llama3", "llama")):
        prog = args.work / f"bpe-{style}.tvm"
        if not (prog / "meta.json").is_file():
            ckpt = tf.make_byte_bpe_tokenizer(args.work / f"bpe-{style}-tokenizer", style)
            tf.tokenizer_only_program(ckpt, prog, model_type)
        cmd = [str(prog), "tokenize", "--text-file", str(lines)]
        native = subprocess.run([args.native_run] + cmd, capture_output=True, text=True, check=True).stdout
        for js, env, label in runs:
            res = subprocess.run([args.node, js] + cmd, capture_output=True, text=True, env=env)
            ok = res.returncode == 0 and res.stdout == native
            failures += not ok
            print(f"   tokenize, {style} byte-level BPE (PCRE2), {label}: "
                  f"{'ids exact' if ok else 'DIFFERENT: ' + res.stderr.strip()[-300:]} ({len(native.splitlines())} lines)")
    return failures


def check_whisper(args, runs: list, builds: list) -> int:
    """Whisper in WebAssembly, text out: a seeded random tiny Whisper with a byte-level BPE
    tokenizer trained here (tests/python/text_fixtures.py), imported once; 6000 samples of
    noise as a 16-bit WAV (natively, and tensorvm-run.js, --wav) and as the same floats
    (tvm_transcribe). The transcript, with French given and detected by the program, must be
    the native one. Returns the number of failures."""
    import wave

    import numpy as np

    sys.path.insert(0, str(ROOT / "tests" / "python"))
    import text_fixtures as tf
    from tensorvm.pycompiler.import_hf import import_hf

    prog, wav, pcm = args.work / "whisper.tvm", args.work / "whisper-in.wav", args.work / "whisper-in.f32"
    if not (prog / "meta.json").is_file():
        ckpt = tf.tiny_whisper_checkpoint(tf.make_whisper_tokenizer(args.work / "whisper-tokenizer"),
                                          args.work / "whisper-ckpt", seed=5, prompt_config=True)
        import_hf(ckpt, prog)
    audio = (np.random.default_rng(3).standard_normal(6000) * 0.1 * 32768).astype("<i2")
    with wave.open(str(wav), "wb") as f:
        f.setnchannels(1), f.setsampwidth(2), f.setframerate(16000), f.writeframes(audio.tobytes())
    (audio.astype(np.float32) / np.float32(32768)).astype("<f4").tofile(pcm)  # as io/wav_file.cpp reads it
    settings = [{"language": "fr", "max_new_tokens": 8}, {"max_new_tokens": 8}]
    expected, failures = [], 0
    for setting in settings:
        opts = [a for k, v in setting.items() for a in (["--language", v] if k == "language" else ["--arg", f"{k}={v}"])]
        cmd = [str(prog), "transcribe", "--wav", str(wav)] + opts
        expected.append(subprocess.run([args.native_run] + cmd, capture_output=True, text=True, check=True).stdout)
        for js, env, label in runs:
            res = subprocess.run([args.node, js] + cmd, capture_output=True, text=True, env=env)
            ok = res.returncode == 0 and res.stdout == expected[-1]
            failures += not ok
            print(f"   transcribe --wav {setting}, {label}: "
                  f"{'text exact' if ok else 'DIFFERENT: ' + repr(res.stdout) + res.stderr.strip()[-300:]} "
                  f"{expected[-1]!r}")
    if builds:
        cases = [{"pcm": str(pcm), "args": s} for s in settings]
        failures += WASM_GENERATE.run_test_node(args.node, Path(args.c_api), prog, cases, expected, "text", builds)
    return failures


def arg_list(setting: dict) -> list:
    return [a for k, v in setting.items() for a in ("--arg", f"{k}={v}")]


def translate(cmd: list, prog: Path, text_file: Path, setting: dict, env=None) -> tuple[str, str]:
    res = subprocess.run(cmd + [str(prog), "translate", "--text-file", str(text_file)] + arg_list(setting),
                         capture_output=True, text=True, env=env)
    return (res.stdout if res.returncode == 0 else None), res.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--native-run", required=True, help="the native tensorvm-run")
    ap.add_argument("--run", action="append", default=[], metavar="JS[:ISA]",
                    help="a WebAssembly tensorvm-run.js, optionally with the TENSORVM_ISA to force (repeatable)")
    ap.add_argument("--c-api", default="", metavar="BASE", help="the folder of the builds whose C API to check")
    ap.add_argument("--c-api-build", action="append", default=[], metavar="BUILD[:ISA]",
                    help="check the C API of BASE/BUILD/tensorvm-web, with kernel variant ISA (repeatable)")
    ap.add_argument("--node", default="node")
    ap.add_argument("--work", required=True, type=Path, help="directory for the program")
    ap.add_argument("--train-seconds", type=float, default=60.0)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    prog = ensure_program(args.work, args.train_seconds)
    text_file = args.work / "numbers-in.txt"
    text_file.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    expected = []
    for setting in SETTINGS:
        out, err = translate([args.native_run], prog, text_file, setting)
        if out is None:
            sys.exit(f"wasm-text: native translate {setting} failed: {err}")
        expected.append(out)
    print(f"wasm-text: {prog}: {len(SENTENCES)} lines, greedy / beam 4 / sampling natively; greedy:")
    for src, out in zip(SENTENCES, expected[0].splitlines()):
        print(f"   {src!r} -> {out!r}")
    failures = 0
    runs = []
    for run in args.run:
        js, _, isa = run.partition(":")
        env = dict(os.environ, TENSORVM_ISA=isa) if isa else None
        runs.append((js, env, f"tensorvm-run.js, {Path(js).parent.name} build" + (f", TENSORVM_ISA={isa}" if isa else "")))
    for js, env, label in runs:
        t0 = time.perf_counter()
        bad = []
        for setting, want in zip(SETTINGS, expected):
            out, err = translate([args.node, js], prog, text_file, setting, env)
            if out != want:
                bad.append(f"{setting}: {out!r} != native {want!r} {err.strip()}")
        print(f"   {label}: {len(SETTINGS) - len(bad)}/{len(SETTINGS)} settings text-exact "
              f"({time.perf_counter() - t0:.1f} s)")
        for b in bad:
            print(f"      {b}")
        failures += bool(bad)
    failures += check_pcre2_tokenizers(args, runs[:1])
    failures += check_whisper(args, runs[:1], [tuple(b.partition(":")[::2]) for b in args.c_api_build][:1])
    cases = [{"text": "\n".join(SENTENCES), "args": s} for s in SETTINGS]
    builds = [tuple(b.partition(":")[::2]) for b in args.c_api_build]
    if builds:
        failures += WASM_GENERATE.run_test_node(args.node, Path(args.c_api), prog, cases, expected, "text", builds)
    if failures:
        print(f"wasm-text: {failures} check(s) failed", file=sys.stderr)
        return 1
    print("wasm-text: every translation is the native one, character for character, in WebAssembly under Node")
    return 0


if __name__ == "__main__":
    sys.exit(main())
