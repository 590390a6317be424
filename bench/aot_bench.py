"""The compiled program (`tensorvm compile`, docs/aot.md) against the interpreter, side by side:

    python3 bench/aot_bench.py [--checkpoint opus-mt-en-fr-random] [--threads 1] [--steps 32] [--repeat 7]
                               [--out bench/results/DATE-aot.md]

1. imports the checkpoint (cached), compiles it to C++ and times the build of the
   generated code (the library alone, no ccache: the cost of `cmake --build`);
2. the stripped sizes of the compiled program's command line and of tensorvm-run, both
   linking the full runtime, then both again from one `tensorvm compile --selective`
   project (the runtime built with only the program's ops, sized for a device,
   --kernel-variants as given), after checking those two generate the same bits;
3. startup: each command line run as a process on a 4-token `encode` (load + one call),
   median wall time, and the in-process load time of both (Program::load vs the
   compiled program's binding of ops and weights);
4. decode ms per token, interpreter vs compiled, alternating in one process on the same
   cache and tokens (tests/aot/compare.cpp --bench), after checking every output of
   encode, decode_step and generate (beam, greedy, sampling; --steps new tokens at most)
   is bit-identical.
The machine may be shared: the ratios are the figures to read.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.checkpoint import DEFAULT_BENCH_CACHE, resolve  # noqa: E402


def run(cmd, **kw):
    res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if res.returncode != 0:
        raise SystemExit(f"failed: {' '.join(map(str, cmd))}\n{res.stdout}\n{res.stderr}")
    return res.stdout


def cpu_name() -> str:
    try:
        for line in run(["lscpu"]).splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (SystemExit, FileNotFoundError):
        pass
    return platform.processor() or "?"


def stripped_size(exe: Path, tmp: Path) -> int:
    out = tmp / (exe.name + ".stripped")
    shutil.copy(exe, out)
    run(["strip", out])
    return out.stat().st_size


def process_ms(cmd, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run(cmd)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def selective_sizes(program: Path, tmp: Path, args) -> tuple[int, int, int]:
    """Stripped sizes of compiled-run and tensorvm-run from one `tensorvm compile
    --selective` project (the same selective runtime), checked to generate the same bits."""
    from tensorvm.pycompiler.aot import compile_program

    src, build = tmp / "selective-src", tmp / "selective-build"
    variants = [v for v in args.kernel_variants.split(",") if v]
    compile_program(program, src, name="compiled", selective=True, source=REPO, kernel_variants=variants)
    cfg = ["cmake", "-S", src, "-B", build] + (["-G", "Ninja"] if shutil.which("ninja") else [])
    run(cfg + (["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []))
    run(["cmake", "--build", build, "--target", "compiled-run", "tensorvm-run", "-j2"])
    exes = {"compiled": build / "compiled-run", "interpreter": build / "tensorvm" / "tensorvm-run"}
    for label, exe in exes.items():
        run([exe, program, "generate", "--ids", args.ids, "--arg", f"max_new_tokens={args.steps}",
             "--outputs", tmp / f"selective-{label}.npz"])
    if (tmp / "selective-compiled.npz").read_bytes() != (tmp / "selective-interpreter.npz").read_bytes():
        raise SystemExit("the selective compiled-run and tensorvm-run generate different outputs")
    n_ops = sum(1 for ln in (src / "ops.txt").read_text().splitlines() if ln and not ln.startswith("#"))
    return stripped_size(exes["compiled"], tmp), stripped_size(exes["interpreter"], tmp), n_ops


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default="opus-mt-en-fr-random")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--ids", default="120 4501 33 87 2210 9 0")
    ap.add_argument("--kernel-variants", default="", help="the selective build's variants besides scalar "
                    "(default: all the target's)")
    ap.add_argument("--out", default=None, help="write the results as markdown here")
    ap.add_argument("--work", default=None, help="build here and keep it (default: a temporary directory, removed)")
    args = ap.parse_args()

    import tensorvm
    from tensorvm.pycompiler.aot import compile_program, runtime_cmake_args
    from tensorvm.pycompiler.locations import get_tensorvm_run

    ckpt = resolve(args.checkpoint)
    cache = Path(os.environ.get("TENSORVM_BENCH_CACHE", DEFAULT_BENCH_CACHE)) / "aot"
    program = cache / f"{ckpt.name}.tvm"
    if not (program / "program.py").is_file():
        cache.mkdir(parents=True, exist_ok=True)
        tensorvm.import_hf(ckpt, program)
    tmp = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="aot-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        compile_program(program, tmp / "compiled", name="compiled")
        gen_s = time.perf_counter() - t0
        build = tmp / "build"
        cfg = ["cmake", "-S", REPO / "tests" / "aot", "-B", build, f"-DCOMPILED_DIR={tmp / 'compiled'}",
               *runtime_cmake_args(tmp)]
        if shutil.which("ninja"):
            cfg += ["-G", "Ninja"]
        run(cfg)
        t0 = time.perf_counter()
        run(["cmake", "--build", build, "--target", "compiled", "-j1"])  # the generated C++ alone, one job
        compile_s = time.perf_counter() - t0
        run(["cmake", "--build", build, "-j2"])
        cpp_lines = sum(1 for _ in open(tmp / "compiled" / "compiled.cpp"))
        ir_lines = sum(1 for _ in open(program / "program.py"))

        compiled_run = build / "compiled" / "compiled-run"
        interp_run = Path(get_tensorvm_run())
        size_c, size_i = stripped_size(compiled_run, tmp), stripped_size(interp_run, tmp)
        sel_c, sel_i, n_ops = selective_sizes(program, tmp, args)
        enc = ["encode", "--ids", args.ids]
        start_i = process_ms([interp_run, program, *enc], args.repeat)
        start_c = process_ms([compiled_run, program, *enc], args.repeat)

        # generate is checked with a bounded length: random weights rarely reach EOS
        cap = f"max_new_tokens={args.steps}"
        checks = [cap, f"{cap},num_beams=1", f"{cap},num_beams=1,do_sample=True,seed=7,temperature=2.0,top_k=0"]
        out = run([build / "compare", program, "--ids", args.ids, "--threads", args.threads, "--steps", args.steps,
                   "--bench", args.repeat, *[a for g in checks for a in ("--generate", g)]], timeout=3600)
        load = re.search(r"load: interpreter ([\d.]+) ms, compiled ([\d.]+) ms", out)
        dec = re.search(r"ms/token \(median.*interpreter ([\d.]+), compiled ([\d.]+), compiled/interpreter ([\d.]+)", out)
        cpu = re.search(r"CPU ms/token.*interpreter ([\d.]+), compiled ([\d.]+), compiled/interpreter ([\d.]+)", out)
        identical = [line for line in out.splitlines() if "identical" in line]
    finally:
        if not args.work:
            shutil.rmtree(tmp, ignore_errors=True)

    load1 = os.getloadavg()[0]
    rows = [
        f"# Compiled program vs interpreter ({args.checkpoint})",
        "",
        f"`python3 bench/aot_bench.py --checkpoint {args.checkpoint} --threads {args.threads} --steps {args.steps} "
        f"--repeat {args.repeat}`",
        "",
        f"CPU: {cpu_name()}; {os.cpu_count()} cores; load average {load1:.2f} at the end"
        + (" (a shared machine: figures taken under load; read the ratios)" if load1 > 0.5 else ""),
        "",
        "Outputs checked first, in one process, same inputs and thread count:",
        *[f"- {line}" for line in identical],
        "",
        "| what | interpreter | compiled | compiled / interpreter |",
        "|---|---|---|---|",
        f"| stripped command line, full runtime (bytes) | {size_i} (tensorvm-run) | {size_c} (compiled-run) | "
        f"{size_c / size_i:.2f} |",
        f"| stripped command line, selective runtime: {n_ops} ops, variants "
        f"{args.kernel_variants or 'all'} (bytes) | {sel_i} | {sel_c} | {sel_c / sel_i:.2f} |",
        f"| process start + load + encode of {len(args.ids.split())} tokens (ms, median of {args.repeat}) | "
        f"{start_i:.1f} | {start_c:.1f} | {start_c / start_i:.2f} |",
        f"| load in process (ms: Program::load vs binding ops and weights) | {float(load.group(1)):.2f} | "
        f"{float(load.group(2)):.2f} | {float(load.group(2)) / float(load.group(1)):.2f} |",
        f"| decode_step ms/token ({args.steps} steps, 1 row, {args.threads} thread(s), median of {args.repeat}) | "
        f"{float(dec.group(1)):.3f} | {float(dec.group(2)):.3f} | {float(dec.group(3)):.3f} |",
        *([f"| the same, CPU time of the thread (ms/token) | {float(cpu.group(1)):.3f} | {float(cpu.group(2)):.3f} | "
           f"{float(cpu.group(3)):.3f} |"] if cpu else []),
        "",
        f"Compile: `tensorvm compile` wrote {cpp_lines} lines of C++ for {ir_lines} lines of IR in {gen_s:.1f} s; "
        f"building the generated library (one job, as its CMakeLists says: -Os, no ccache) took {compile_s:.1f} s of wall time.",
        "",
    ]
    text = "\n".join(rows)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
