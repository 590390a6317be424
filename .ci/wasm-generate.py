#!/usr/bin/env python3
"""The Node half of .ci/wasm: Marian programs imported natively give the same tokens when
the WebAssembly tensorvm-run runs them under Node, with each kernel variant.

Each trained tiny checkpoint is imported once with `tensorvm import-hf`, and `tensorvm bundle`
stores generate's inputs (greedy, beam 4, and sampling with a fixed seed) with the outputs the
native VM gives. `node tensorvm-run.js PROGRAM verify` then reruns them in WebAssembly, once per
(build, TENSORVM_ISA, threads) given with --run: token ids must be equal, sequence scores within the
bundle's tolerance (1e-4), since WebAssembly's libm (musl) rounds a few functions otherwise.
The native tensorvm-run verifies the same bundles first, so a failure names the side.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
sys.path.insert(0, str(ROOT / ".ci"))

from make_checkpoints import ensure_checkpoint  # noqa: E402

from tensorvm.pycompiler import cli  # noqa: E402

# (checkpoint, rows of --ids, max_new_tokens): trained tiny Marian variants, whose outputs end
# with EOS at varied lengths and whose beams really differ. Sources of varied length, each
# ending with EOS (0) as a tokenizer's do.
QUICK = [("tiny-marian", "5 17 9 33 2 0; 30 8 0; 12 4 4 21 0", 12)]
FULL = QUICK + [("tiny-untied", "7 3 19 25 11 2 0; 14 0", 16),
                ("tiny-sepvocab-gelu", "9 9 31 2 0; 6 22 18 0", 16)]
# The settings each program's bundle holds: greedy, beam search, and sampling with a seed
# (the program's own generator, core/rng.h: the same draws on every platform).
NATIVE_RUN = ""
SETTINGS = [["--arg", "num_beams=1"],
            ["--arg", "num_beams=4"],
            ["--arg", "do_sample=1", "--arg", "seed=1234", "--arg", "top_k=8", "--arg", "temperature=0.9"]]


def native_ids(native_run: str, prog: Path, ids: str, args: dict) -> list:
    """generate's first output (token ids) from the native tensorvm-run, as rows of ints."""
    cmd = [native_run, str(prog), "generate", "--ids", ids]
    for k, v in args.items():
        cmd += ["--arg", f"{k}={v}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("output 0 = tensor i64"))
    rows = []
    for line in out[start + 1:]:
        if line.startswith("output "):
            break
        rows.append([int(t) for t in line.split()])
    return rows


def check_c_api(node: str, base: Path, prog: Path, ids: str, new_tokens: int, builds: list) -> int:
    """web/test_node.js: the C API (program from bytes, streamed tokens) gives the native ids
    for every setting, and hostile bytes give errors; returns the number of failures."""
    cases = []
    for setting in SETTINGS:
        args = {"max_new_tokens": new_tokens}
        args.update(dict(kv.split("=", 1) for kv in setting[1::2]))
        cases.append({"ids": ids, "args": args})
    expected = [native_ids(NATIVE_RUN, prog, c["ids"], c["args"]) for c in cases]
    return run_test_node(node, base, prog, cases, expected, "ids", builds)


def run_test_node(node: str, base: Path, prog: Path, cases: list, expected: list, key: str, builds: list) -> int:
    """Runs web/test_node.js on `cases` per (build, isa) of `builds`, compares each result's
    `key` ("ids", or "text" for text cases: .ci/wasm-text.py) with `expected`, prints a line
    per build and each difference or hostile-input failure; returns the number of failures."""
    failures = 0
    for build, isa in builds:
        cmd = [node, str(ROOT / "web" / "test_node.js"), str(base), str(prog), json.dumps(cases), build] + ([isa] if isa else [])
        res = subprocess.run(cmd, capture_output=True, text=True)
        label = f"C API, {build} build" + (f", variant {isa}" if isa else "")
        if res.returncode != 0:
            print(f"   {label}: FAILED\n{res.stdout}{res.stderr}")
            failures += 1
            continue
        got = json.loads(res.stdout.strip().splitlines()[-1])
        bad = [i for i, (r, e) in enumerate(zip(got["results"], expected)) if r[key] != e]
        steps = sum(r["steps"] for r in got["results"])
        print(f"   {label} ({got['variant']}, {got.get('threads', 1)} thread(s)): {len(cases) - len(bad)}/{len(cases)} settings "
              f"{'token' if key == 'ids' else 'text'}-exact, {steps} streamed steps, "
              f"{len(got['hostile'])} hostile-input failures")
        for i in bad:
            print(f"      setting {i}: {got['results'][i][key]!r} != native {expected[i]!r}")
        for h in got["hostile"]:
            print(f"      hostile input: {h}")
        failures += bool(bad) + bool(got["hostile"])
    return failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--native-run", required=True, help="the native tensorvm-run")
    ap.add_argument("--run", action="append", required=True, metavar="JS[:ISA[:THREADS]]",
                    help="a WebAssembly tensorvm-run.js, optionally with the TENSORVM_ISA to force and verify's "
                         "--threads (the pthreads build: more than 1) (repeatable)")
    ap.add_argument("--node", default="node")
    ap.add_argument("--work", required=True, type=Path, help="directory for the programs")
    ap.add_argument("--quick", action="store_true", help="one checkpoint only")
    ap.add_argument("--c-api", default="", metavar="BASE",
                    help="also check the C API (web/test_node.js) of the builds under BASE")
    ap.add_argument("--c-api-build", action="append", default=[], metavar="BUILD[:ISA]",
                    help="a build under BASE whose C API to check, with kernel variant ISA (repeatable; "
                         "default: simd, simd:scalar and scalar)")
    args = ap.parse_args()
    global NATIVE_RUN
    NATIVE_RUN = args.native_run
    args.work.mkdir(parents=True, exist_ok=True)
    failures = 0
    for name, ids, new_tokens in (QUICK if args.quick else FULL):
        prog = args.work / f"{name}.tvm"
        cmd = ["import-hf", str(ensure_checkpoint(name)), "-o", str(prog)]
        if cli.main(cmd) != 0:
            sys.exit(f"wasm-generate: tensorvm {shlex.join(cmd)} failed")
        for n, setting in enumerate(SETTINGS):
            bundle = ["bundle", str(prog), "generate", "--ids", ids, "--arg", f"max_new_tokens={new_tokens}"] + setting
            if cli.main(bundle + (["--replace"] if n == 0 else [])) != 0:
                sys.exit(f"wasm-generate: tensorvm {shlex.join(bundle)} failed")
        print(f"{name}: bundled generate --ids '{ids}', greedy, beam 4 and sampling (seed 1234)")
        sides = [("native", [args.native_run], None, [])]
        for run in args.run:
            js, isa, threads = (run.split(":") + ["", ""])[:3]
            env = dict(os.environ, TENSORVM_ISA=isa) if isa else None
            label = f"wasm {Path(js).parent.name}" + (f" TENSORVM_ISA={isa}" if isa else "")
            sides.append((label + (f" --threads {threads}" if threads else ""), [args.node, js], env,
                          ["--threads", threads] if threads else []))
        for side, exe, env, extra in sides:
            t0 = time.perf_counter()
            res = subprocess.run(exe + [str(prog), "verify"] + extra, capture_output=True, text=True, env=env)
            print(f"   {side} ({time.perf_counter() - t0:.2f} s):")
            for line in (res.stdout + res.stderr).strip().splitlines()[-8:]:
                print(f"      {line}")
            failures += res.returncode != 0
        if args.c_api:
            builds = [tuple(b.partition(":")[::2]) for b in args.c_api_build or ["simd", "simd:scalar", "scalar"]]
            failures += check_c_api(args.node, Path(args.c_api), prog, ids, new_tokens, builds)
    if failures:
        print(f"wasm-generate: {failures} verify run(s) failed", file=sys.stderr)
        return 1
    print("wasm-generate: every bundled check passes natively and in WebAssembly under Node (tokens exact)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
