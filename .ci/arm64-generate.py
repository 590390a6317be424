#!/usr/bin/env python3
"""The generate half of .ci/arm64: Marian programs imported on x86 give the same tokens
when tensorvm-run runs them on aarch64 (under qemu-user) as on x86.

Each program is imported once with `tensorvm import-hf` (f32, and --quantize int8 / w8a8),
and `tensorvm bundle` stores generate's inputs (greedy and beam 4) with the outputs the
x86 VM gives. `tensorvm-run PROGRAM verify` then reruns them with the x86 binary and with
the aarch64 one under qemu, once per TENSORVM_ISA value given with --isa: token ids must
be equal, the sequence scores within the bundle's tolerance (1e-4), since the two CPUs
round differently.
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

from make_checkpoints import SPECS, ensure_checkpoint  # noqa: E402

from tensorvm.pycompiler import cli  # noqa: E402

# (checkpoint, quantizations, rows, max source length, max_new_tokens): tiny-untied is a small
# trained Marian variant (outputs depend on the input and end with EOS at varied lengths);
# opus-mt-en-fr-random has the real opus-mt-en-fr shape with seeded random weights.
# Not its w8a8 program: outside the kernels the two CPUs differ in the last bits (Eigen's
# attention products fuse multiply-adds on AArch64, not on baseline x86-64: encoder states
# ~1e-6 apart), w8a8 rounds activations to 8 bits at run time, so such a difference can move
# one by a whole step, and this random model's greedy logits are close enough for that to
# change a token (the first source below, step 6).
QUICK = [("tiny-untied", [None], 4, 10, 16)]
FULL = [("tiny-untied", [None, "int8", "w8a8"], 6, 14, 20),
        ("opus-mt-en-fr-random", [None, "int8"], 2, 8, 8)]


def sources(name: str, rows: int, max_len: int, seed: int) -> str:
    """`--ids` text: `rows` sources of varied length, each ending with EOS as a tokenizer's do."""
    cfg = SPECS[name].config
    eos, pad = cfg["eos_token_id"], cfg["pad_token_id"]
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(rows):
        n = int(rng.integers(2, max_len))
        ids = [int(t) for t in rng.integers(2, min(cfg["vocab_size"], 1000), size=n) if t != pad]
        out.append(" ".join(map(str, ids + [eos])))
    return "; ".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--x86-run", required=True, help="the x86 tensorvm-run")
    ap.add_argument("--arm64-run", required=True, help="the aarch64 tensorvm-run")
    ap.add_argument("--emulator", default="qemu-aarch64 -L /usr/aarch64-linux-gnu")
    ap.add_argument("--work", required=True, type=Path, help="directory for the programs and outputs")
    ap.add_argument("--isa", action="append", default=[],
                    help="a TENSORVM_ISA kernel variant for the aarch64 runs (repeatable; default auto)")
    ap.add_argument("--quick", action="store_true", help="one small f32 program only")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    emulator = shlex.split(args.emulator)
    isas = args.isa or ["auto"]
    mismatches = 0
    for name, quantizations, rows, max_len, new_tokens in (QUICK if args.quick else FULL):
        ckpt = ensure_checkpoint(name)
        ids = sources(name, rows, max_len, seed=len(name))
        for quant in quantizations:
            label = f"{name} {quant or 'f32'}"
            prog = args.work / f"{name}-{quant or 'f32'}.tvm"
            cmd = ["import-hf", str(ckpt), "-o", str(prog)] + (["--quantize", quant] if quant else [])
            if cli.main(cmd) != 0:
                sys.exit(f"arm64-generate: tensorvm {shlex.join(cmd)} failed")
            # The expected outputs come from the x86 VM (the Python binding); each beam
            # setting is a case of the program's bundle (docs/runtime.md "Bundled checks").
            for n, beams in enumerate((1, 4)):
                bundle = ["bundle", str(prog), "generate", "--ids", ids, "--arg", f"max_new_tokens={new_tokens}",
                          "--arg", f"num_beams={beams}"] + (["--replace"] if n == 0 else [])
                if cli.main(bundle) != 0:
                    sys.exit(f"arm64-generate: tensorvm {shlex.join(bundle)} failed")
            print(f"{label}: bundled generate --ids '{ids}' --arg max_new_tokens={new_tokens}, num_beams 1 and 4")
            for side, cmd, env in [("x86", [args.x86_run], None)] + \
                    [(f"arm64 TENSORVM_ISA={isa}", emulator + [args.arm64_run], dict(os.environ, TENSORVM_ISA=isa))
                     for isa in isas]:
                t0 = time.perf_counter()
                res = subprocess.run(cmd + [str(prog), "verify", "--threads", "2"], capture_output=True, text=True,
                                     env=env)
                print(f"   {side} ({time.perf_counter() - t0:.2f} s):")
                for line in (res.stdout + res.stderr).strip().splitlines():
                    print(f"      {line}")
                mismatches += res.returncode != 0
    if mismatches:
        print(f"arm64-generate: {mismatches} verify run(s) failed", file=sys.stderr)
        return 1
    print("arm64-generate: every bundled check passes on x86 and on aarch64 (tokens exact)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
