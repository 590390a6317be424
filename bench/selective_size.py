#!/usr/bin/env python3
"""Stripped size of tensorvm-run: the full runtime against selective builds for a Marian
checkpoint's programs (docs/runtime.md "Selective build").

    PYTHONPATH=build/dev/pkg python3 bench/selective_size.py [--checkpoint DIR|NAME] [--work DIR]
        [--full-run PATH] [--variants "all,avx2"]

Builds, in WORK (default build/selective-size; ccache is used when installed):
  full-size     every op, sized for a device like the selective builds (-Os, --gc-sections, no text, no oneDNN)
  f32           the ops of the f32 program
  f32+w8a8      the ops of the f32 and the w8a8 programs
each once per kernel-variant set (all of the target's, or scalar plus the ones named), and
compares with --full-run (default: the tensorvm-run of the package, the ordinary Release
build). Each selective runtime must generate the same tokens as --full-run. Sizes are of
`strip` copies; the largest groups of functions (nm) are printed for the smallest build.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

from tensorvm.pycompiler import cli  # noqa: E402
from tensorvm.pycompiler.locations import get_tensorvm_run  # noqa: E402


def sh(cmd, **kw) -> str:
    res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if res.returncode != 0:
        sys.exit(f"selective_size: failed: {' '.join(map(str, cmd))}\n{res.stdout[-4000:]}{res.stderr[-4000:]}")
    return res.stdout


def stripped_size(exe: Path) -> int:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "s"
        sh(["strip", "-o", out, exe])
        return out.stat().st_size


def build(project: Path, build_dir: Path, variants: str) -> Path:
    launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
    sh(["cmake", "-S", project, "-B", build_dir, "-G", "Ninja", f"-DTENSORVM_KERNEL_VARIANTS={variants}", *launcher])
    sh(["cmake", "--build", build_dir, "--target", "tensorvm-run"])
    return build_dir / "tensorvm" / "tensorvm-run"


def groups(exe: Path) -> list[tuple[str, int]]:
    """Bytes of code per part of the runtime, from nm's symbol sizes."""
    g: collections.Counter = collections.Counter()
    for line in sh(["nm", "-C", "--size-sort", "-S", exe]).splitlines():
        parts = line.split(None, 3)
        if len(parts) < 4 or parts[2].lower() not in ("t", "w"):
            continue
        size, name = int(parts[1], 16), parts[3]
        m = re.search(r"ops::kernels::(\w+)::", name)
        key = (f"kernel variant {m.group(1)}" if m else "Eigen" if "Eigen::" in name else
               "nlohmann::json" if "nlohmann" in name else "fmt" if "fmt::" in name else
               "ir (parser, checker, weight files)" if re.match(r"(\S+ )?ir::", name) else
               "ops (op files, registry)" if re.match(r"(\S+ )?ops::", name) else
               "vm (loader, interpreter, tensors)" if re.match(r"(\S+ )?vm::", name) else
               "std templates" if "std::" in name else "tensorvm-run's own")
        g[key] += size
    return g.most_common()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default="tiny-untied", help="a Marian checkpoint dir or make_checkpoints name")
    ap.add_argument("--work", type=Path, default=ROOT / "build" / "selective-size")
    ap.add_argument("--full-run", type=Path, default=None, help="the full tensorvm-run to compare with")
    ap.add_argument("--variants", default="all,avx2" if os.uname().machine == "x86_64" else "all,neon",
                    help="kernel-variant sets, comma-separated: all, or the variants kept besides scalar ('+' joins)")
    args = ap.parse_args()
    from make_checkpoints import ensure_checkpoint

    ckpt = Path(args.checkpoint) if Path(args.checkpoint).is_dir() else ensure_checkpoint(args.checkpoint)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    progs = {}
    for q in ("f32", "w8a8"):
        progs[q] = work / f"marian-{q}.tvm"
        if not progs[q].exists():
            assert cli.main(["import-hf", str(ckpt), "-o", str(progs[q])] + ([] if q == "f32" else ["--quantize", q])) == 0
    full_run = args.full_run or Path(get_tensorvm_run())
    selections = {"full-size": None, "f32": [progs["f32"]], "f32+w8a8": [progs["f32"], progs["w8a8"]]}
    rows = [("full (ordinary Release build)", "all", stripped_size(full_run), None)]
    smallest = None
    for vset in args.variants.split(","):
        variants = "" if vset == "all" else vset.replace("+", ";")
        for name, programs in selections.items():
            project = work / name
            if programs is None:  # every op: the ops.txt of all the registry's ops
                from tensorvm.pycompiler.selective import _cmake_text, builtin_ops

                project.mkdir(exist_ok=True)
                (project / "ops.txt").write_text("\n".join(sorted(builtin_ops())) + "\n")
                (project / "CMakeLists.txt").write_text(_cmake_text(ROOT, ["(every op)"], len(builtin_ops()), []))
            else:
                assert cli.main(["selective-build", *map(str, programs), "-o", str(project)]) == 0
            exe = build(project, project / f"build-{vset}", variants)
            ops = len(sh([exe, "--ops"]).split())
            for prog in programs or []:
                for beams in (1, 4):
                    outs = []
                    for run in (full_run, exe):
                        out = work / f"out-{len(outs)}.npz"
                        sh([run, prog, "generate", "--ids", "5 6 7 0; 9 10 0", "--arg", "max_new_tokens=10",
                            "--arg", f"num_beams={beams}", "--outputs", out])
                        outs.append(np.load(out)["arr_0"])
                    if not np.array_equal(outs[0], outs[1]):
                        sys.exit(f"selective_size: {name} ({vset}) generates other tokens than {full_run} for {prog}")
            size = stripped_size(exe)
            rows.append((f"{name} ({ops} ops)", vset, size, exe))
            if smallest is None or size < smallest[1]:
                smallest = (exe, size)
    print(f"{'runtime':<32} {'kernel variants':<16} {'stripped':>12}")
    for name, vset, size, _ in rows:
        print(f"{name:<32} {vset:<16} {size:>9,d} B  ({size / 2**20:.2f} MiB, {size / rows[0][2]:.2f} of full)")
    print("\ntokens: every selective runtime generates what the full one does (f32 and w8a8, greedy and beam 4)")
    print(f"\ncode of the smallest, {smallest[0]}, by part (nm symbol sizes):")
    for key, size in groups(smallest[0]):
        print(f"  {size / 1024:8.1f} KiB  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
