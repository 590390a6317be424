"""MergeLinears (pycompiler/passes/merge_linears.py): linears reading one input become
one linear over stacked weights and a slice per result; the VM computes the same bits
before and after, on every kernel variant, and the program keeps only the weights it reads."""
import numpy as np
import pytest

import tensorvm
from tensorvm.pycompiler.cli import main
from tensorvm.pycompiler.passes import MergeLinears, PassManager, dce, weights_read
from tensorvm.pycompiler.program_dir import write_program_dir
from tensorvm.pycompiler.replay import Replayer, check

from pyc_helpers import requires_vm

pytestmark = pytest.mark.usefixtures("kernel_variant")

D, N = 16, 256  # input width; output widths are whole blocks of 256 (the oneDNN column block)

TEXT = """# tensorvm ir 1
def attn(x: Tensor, layer: int) -> tuple[Tensor, Tensor, Tensor]:
    q_bias = param("l.{}.q_proj.bias", layer)
    q_weight = param("l.{}.q_proj.weight", layer)
    q = linear(x, q_weight, q_bias)
    k_bias = param("l.{}.k_proj.bias", layer)
    k_weight = param("l.{}.k_proj.weight", layer)
    k = linear(x, k_weight, k_bias)
    v_bias = param("l.{}.v_proj.bias", layer)
    v_weight = param("l.{}.v_proj.weight", layer)
    v = linear(x, v_weight, v_bias)
    return q, k, v

def cross(x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    k_weight = param("c.k.weight")
    k = linear(x, k_weight)
    v_weight = param("c.v.weight")
    v = linear(x, v_weight)
    s_weight = param("small.a")
    s = linear(x, s_weight)
    t_weight = param("small.b")
    t = linear(x, t_weight)
    return k, v, s, t

def main(x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    q0, k0, v0 = attn(x, 0)
    q1, k1, v1 = attn(x, 1)
    ck, cv, s, t = cross(x)
    return q0, k1, v1, ck, cv, s, t
"""


def weights(rng):
    w = {}
    for i in range(2):
        for n, rows in (("q", N), ("k", N), ("v", 2 * N)):
            w[f"l.{i}.{n}_proj.weight"] = rng.standard_normal((rows, D)).astype(np.float32)
            w[f"l.{i}.{n}_proj.bias"] = rng.standard_normal(rows).astype(np.float32)
    w["c.k.weight"] = rng.standard_normal((N, D)).astype(np.float32)
    w["c.v.weight"] = rng.standard_normal((N, D)).astype(np.float32)
    w["small.a"] = rng.standard_normal((8, D)).astype(np.float32)  # 8 columns: not merged
    w["small.b"] = rng.standard_normal((8, D)).astype(np.float32)
    return w


def merged(rng):
    w = weights(rng)
    out, stats = PassManager([("merge", MergeLinears(w)), ("dce", dce)]).run(check(TEXT))
    return w, out, stats


def test_merges_linears_sharing_an_input(rng):
    w, out, stats = merged(rng)
    assert stats.removed["merge"] == 3  # q+k+v (two linears fewer) and c.k+v (one)
    text = str(out)
    assert 'param("l.{}.q+k+v_proj.weight", layer)' in text and 'param("c.k+v.weight")' in text
    assert "q = slice(merged_linear_0, -1, 0, 256)" in text and "v = slice(merged_linear_0, -1, 512, 1024)" in text
    assert "s = linear(x, s_weight)" in text
    np.testing.assert_array_equal(w["l.1.q+k+v_proj.weight"],
                                  np.concatenate([w[f"l.1.{n}_proj.weight"] for n in "qkv"]))
    read = weights_read(out, w)
    assert "l.0.q+k+v_proj.bias" in read and "l.0.q_proj.weight" not in read and "small.a" in read


def test_merged_program_replays_the_same(rng):
    w, out, _ = merged(rng)
    x = rng.standard_normal((3, D)).astype(np.float32)
    for a, b in zip(Replayer(text=TEXT, weights=w).run("main", x), Replayer(text=str(out), weights=w).run("main", x)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@requires_vm
@pytest.mark.parametrize("threads, half", [(1, None), (2, None), (2, "f16"), (1, "bf16")])
def test_merged_program_is_bit_for_bit_in_the_vm(tmp_path, rng, threads, half):
    w = weights(rng)
    if half:  # 16-bit weights (biases stay f32) merge the same way
        import ml_dtypes

        dt = np.float16 if half == "f16" else ml_dtypes.bfloat16
        w = {k: v.astype(dt) if v.ndim == 2 else v for k, v in w.items()}
    src = write_program_dir(tmp_path / "a.tvm", TEXT, w, {})
    assert main(["optimize", str(src), "-o", str(tmp_path / "b.tvm")]) == 0
    a, b = tensorvm.load(src, num_threads=threads), tensorvm.load(tmp_path / "b.tvm", num_threads=threads)
    assert "merged_linear" in b.ir
    assert not any(n.startswith("l.0.q_proj") for n, *_ in b.weights_info())
    for rows in (1, 8, 32, 40, 300):  # the streaming kernels, then the GEMM
        x = rng.standard_normal((rows, D)).astype(np.float32)
        for got, want in zip(b.run("main", x), a.run("main", x)):
            np.testing.assert_array_equal(got, want)


GATED = """# tensorvm ir 1
def mlp(x: Tensor) -> Tensor:
    gate_weight = param("m.gate.weight")
    gate = linear(x, gate_weight)
    act = silu(gate)
    up_weight = param("m.up.weight")
    up = linear(x, up_weight)
    h = mul(act, up)
    return h
"""


def test_a_linear_fused_into_linear_act_is_not_merged_back(rng):
    """fuse turns silu(gate) into linear_act and leaves the gate linear for dce: merging
    that dead linear with up_proj would compute the gate's columns twice (Qwen's MLP)."""
    from tensorvm.pycompiler.passes import default_passes

    w = {"m.gate.weight": rng.standard_normal((N, D)).astype(np.float32),
         "m.up.weight": rng.standard_normal((N, D)).astype(np.float32)}
    out, _ = PassManager(default_passes(w)).run(check(GATED))
    text = str(out)
    assert "merged" not in text and 'linear_act(x, gate_weight, None, "silu")' in text and "linear(x, up_weight)" in text
    x = rng.standard_normal((3, D)).astype(np.float32)
    np.testing.assert_array_equal(Replayer(text=GATED, weights=w).run("mlp", x),
                                  Replayer(text=str(out), weights=w).run("mlp", x))
