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
     hostile text (none, invalid UTF-8, huge, no tokenizer ...) must give errors, per build.
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
    for run in args.run:
        js, _, isa = run.partition(":")
        env = dict(os.environ, TENSORVM_ISA=isa) if isa else None
        label = f"tensorvm-run.js, {Path(js).parent.name} build" + (f", TENSORVM_ISA={isa}" if isa else "")
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
