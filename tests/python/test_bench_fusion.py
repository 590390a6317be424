"""Smoke runs of bench/fusion_bench.py and bench/fused_ops_bench.py on tiny sizes, so they
cannot rot: seconds, not a measurement."""
import subprocess
import sys
from pathlib import Path

from pyc_helpers import requires_vm

ROOT = Path(__file__).resolve().parents[2]


def run(*args):
    r = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, f"{args[0]} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


@requires_vm
def test_fusion_bench_runs():
    import hf_reference as hf

    out = run(ROOT / "bench" / "fusion_bench.py", "--checkpoint", hf.checkpoint_dir("tiny-marian"), "--threads", "1",
              "--repeats", "1", "--batch", "2", "--source-len", "6", "--max-new-tokens", "3", "--profile-repeats", "1")
    assert "outputs: the same" in out and "add_layer_norm" in out and "optimized over traced" in out


@requires_vm
def test_fused_ops_bench_runs():
    out = run(ROOT / "bench" / "fused_ops_bench.py", "--rounds", "1", "--rows", "4")
    assert "add_layer_norm" in out and "linear_act" in out
