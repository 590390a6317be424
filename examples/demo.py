"""The main job, in two parts, both run by the C++ VM (tensorvm-run, no Python in the loop):

1. text in, text out: a tiny Marian trained here for about a minute on a toy
   English-to-French corpus of number words (examples/text_demo.py), imported with
   its tokenizer and asked to translate sentences it has not seen;
2. the real size: an opus-mt-en-fr-shaped Marian checkpoint, imported, the IR of one
   decoder layer printed, token sequences translated with ms per generated token.

    python examples/demo.py [--workdir build/demo] [--threads 2] [--train-seconds 60]

No hub access exists here, so the checkpoint is the real opus-mt-en-fr architecture
and configuration with seeded random weights (tests/fixtures/make_checkpoints.py);
with a real opus-mt directory, pass --checkpoint DIR instead.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

import tensorvm
from tensorvm.pycompiler.import_hf import import_hf

ROOT = Path(__file__).resolve().parents[1]
SENTENCES = ["3 57 912 4406 23 7 0", "128 5 77 2044 0", "31 902 17 6 1200 48 9 330 0"]


def tensorvm_run() -> str:
    installed = Path(tensorvm.__file__).parent / "bin" / "tensorvm-run"
    builds = sorted(ROOT.glob("build/*/tensorvm-run"), key=lambda p: p.stat().st_mtime, reverse=True)
    for candidate in (installed, ROOT / "build" / "release" / "tensorvm-run", *builds):
        if candidate.is_file():
            return str(candidate)
    sys.exit("demo: tensorvm-run not found (run `bash .ci/setup` first)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default=str(ROOT / "build" / "demo"))
    ap.add_argument("--checkpoint", help="a MarianMTModel directory (default: build the opus-mt-en-fr-shaped one)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--train-seconds", type=float, default=60.0, help="training time of part 1 (0: skip part 1)")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)

    if args.train_seconds > 0:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import text_demo

        print("==== part 1: text in, text out (a tiny Marian trained on number words)")
        text_demo.main(["--out", str(work / "numbers"), "--seconds", str(args.train_seconds)])  # exits on failure
        print("==== part 2: an opus-mt-en-fr-shaped Marian (random weights: token ids, timing)")

    if args.checkpoint:
        ckpt = Path(args.checkpoint)
    else:
        sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
        from make_checkpoints import ensure_checkpoint

        t0 = time.perf_counter()
        ckpt = ensure_checkpoint("opus-mt-en-fr-random", root=work / "checkpoints")
        print(f"== checkpoint: {ckpt} ({time.perf_counter() - t0:.1f} s)")

    program_dir = work / "opus-mt-en-fr.tvm"
    t0 = time.perf_counter()
    import_hf(ckpt, program_dir)
    program = tensorvm.load(program_dir)
    size_mb = sum(f.stat().st_size for f in program_dir.iterdir()) / 1e6
    print(f"== imported: {program_dir} ({size_mb:.0f} MB, {time.perf_counter() - t0:.1f} s); "
          f"functions: {', '.join(program.functions)}")

    layer = re.search(r"^def decoder_layer\(.*?(?=^def |\Z)", program.ir, re.S | re.M).group(0)
    lines = layer.rstrip().splitlines()
    print(f"== IR of one decoder layer ({len(lines) - 1} instructions, called once per layer):")
    print("\n".join(lines[:40]) + ("\n    ..." if len(lines) > 40 else ""))

    print(f"== generate in the C++ VM (tensorvm-run, {args.threads} threads, greedy, "
          f"max_new_tokens={args.max_new_tokens}):")
    options = ["--arg", f"max_new_tokens={args.max_new_tokens}"]
    if "num_beams" in tensorvm._C.Program.load(str(program_dir)).function_info("generate")["params"]:
        options += ["--arg", "num_beams=1"]
    for ids in SENTENCES:
        cmd = [tensorvm_run(), str(program_dir), "generate", "--ids", ids, "--threads", str(args.threads), *options,
               "--time"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            print(res.stderr, file=sys.stderr)
            return 1
        out = res.stdout.strip().splitlines()
        tokens = out[1].strip() if len(out) > 1 else "?"
        timing = out[-1]
        print(f"  source {ids}\n  output {tokens}\n  {timing}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
