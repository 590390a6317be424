"""The fusion pass (pycompiler/passes/fuse.py): it fuses where the first op's result is
read by the second alone, leaves every other place, and the program computes the same
before and after: bit for bit on the reference ops (replay) and in the VM."""
import numpy as np
import pytest

import tensorvm
from tensorvm.pycompiler.passes import DEFAULT_PASSES, PassManager, count_statements, dce, fuse
from tensorvm.pycompiler.replay import Replayer, check

from pyc_helpers import requires_vm

TEXT = """# tensorvm ir 1
def main(x: Tensor, r: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    w = param("w")
    b = param("b")
    g = param("g")
    add_0 = add(x, r)
    ln_0 = layer_norm(add_0, g, b, eps=1e-05)
    add_1 = add(ln_0, r)
    rms_0 = rms_norm(add_1, g, eps=1e-06)
    add_2 = add(rms_0, x)
    ln_1 = layer_norm(add_2, g, b, eps=0.001)
    lin_0 = linear(ln_1, w, b)
    silu_0 = silu(lin_0)
    lin_1 = linear(silu_0, w)
    relu_0 = relu(lin_1)
    lin_2 = linear(relu_0, w, None)
    sig_0 = sigmoid(lin_2)
    lin_3 = linear(sig_0, w, b)
    tanh_0 = tanh(lin_3)
    lin_4 = linear(tanh_0, w, b)
    silu_1 = silu(lin_4)
    ln_2 = layer_norm(x, g, b, eps=1e-05)
    return ln_0, rms_0, ln_1, silu_1, add_2, lin_4, ln_2
"""
# Fused: ln_0 (add_0 read once), rms_0, silu_0, relu_0, sig_0. Not: ln_1 (add_2 is
# returned too), silu_1 (lin_4 is returned), tanh (no fused op), ln_2 (no add).


def body(m, fn="main"):
    from tensorvm.pycompiler import ir

    return [ir.print_stmt(s) for s in m.function(fn).body]


def weights(rng):
    return {"w": rng.standard_normal((8, 8)).astype(np.float32), "b": rng.standard_normal(8).astype(np.float32),
            "g": rng.standard_normal(8).astype(np.float32)}


def test_fuses_single_use_pairs_only():
    out, stats = PassManager([("fuse", fuse), ("dce", dce)]).run(check(TEXT))
    text = body(out)
    assert stats.removed["fuse"] == 5
    assert "ln_0 = add_layer_norm(x, r, g, b, eps=1e-05)" in text
    assert "rms_0 = add_rms_norm(ln_0, r, g, eps=1e-06)" in text
    assert 'silu_0 = linear_act(ln_1, w, b, "silu")' in text
    assert 'relu_0 = linear_act(silu_0, w, None, "relu")' in text
    assert 'sig_0 = linear_act(relu_0, w, None, "sigmoid")' in text
    assert "ln_1 = layer_norm(add_2, g, b, eps=0.001)" in text
    assert "silu_1 = silu(lin_4)" in text and "tanh_0 = tanh(lin_3)" in text
    assert not any(s.startswith(("add_0 =", "add_1 =", "lin_0 =", "lin_1 =", "lin_2 =")) for s in text)
    assert count_statements(out) == count_statements(check(TEXT)) - 5


def test_fused_program_replays_bit_for_bit(rng):
    out, _ = PassManager(DEFAULT_PASSES).run(check(TEXT))
    w = weights(rng)
    x, r = rng.standard_normal((2, 3, 8)).astype(np.float32), rng.standard_normal((2, 3, 8)).astype(np.float32)
    before = Replayer(text=TEXT, weights=w).run("main", x, r)
    after = Replayer(text=str(out), weights=w).run("main", x, r)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


@requires_vm
@pytest.mark.parametrize("threads", [1, 2])
def test_fused_program_runs_bit_for_bit_in_the_vm(tmp_path, rng, threads):
    from tensorvm.pycompiler.program_dir import write_program_dir

    out, _ = PassManager(DEFAULT_PASSES).run(check(TEXT))
    w = weights(rng)
    a = tensorvm.load(write_program_dir(tmp_path / "a.tvm", TEXT, w, {}), num_threads=threads)
    b = tensorvm.load(write_program_dir(tmp_path / "b.tvm", str(out), w, {}), num_threads=threads)
    # 40 rows: past the streaming kernels' 32, so the GEMM path's epilogue runs too.
    for rows in (3, 40):
        x, r = rng.standard_normal((rows, 8)).astype(np.float32), rng.standard_normal((rows, 8)).astype(np.float32)
        for got, want in zip(b.run("main", x, r), a.run("main", x, r)):
            np.testing.assert_array_equal(got, want)


def test_a_fusion_keeps_a_broadcasting_add_exact(rng):
    # The pattern matches any add; the fused kernel hands what it does not fuse to add.
    text = TEXT.replace("add_0 = add(x, r)", "add_0 = add(x, 0.5)")
    out, _ = PassManager(DEFAULT_PASSES).run(check(text))
    assert "ln_0 = add_layer_norm(x, 0.5, g, b, eps=1e-05)" in body(out)
    w = weights(rng)
    x, r = rng.standard_normal((3, 8)).astype(np.float32), rng.standard_normal((1, 8)).astype(np.float32)
    for a, b in zip(Replayer(text=text, weights=w).run("main", x, r), Replayer(text=str(out), weights=w).run("main", x, r)):
        np.testing.assert_array_equal(a, b)


@requires_vm
def test_import_hf_fuses_unless_told_not_to(tmp_path):
    import hf_reference as hf
    from tensorvm.pycompiler.cli import main

    ckpt = hf.checkpoint_dir("tiny-marian")
    assert main(["import-hf", str(ckpt), "-o", str(tmp_path / "plain.tvm"), "--no-optimize"]) == 0
    assert main(["import-hf", str(ckpt), "-o", str(tmp_path / "fused.tvm")]) == 0
    plain, fused = tensorvm.load(tmp_path / "plain.tvm"), tensorvm.load(tmp_path / "fused.tvm")
    assert "add_layer_norm" not in plain.ir and "linear_act" not in plain.ir
    assert "add_layer_norm" in fused.ir
    assert count_statements(fused.module) < count_statements(plain.module)
    ids = np.array([[5, 6, 7, 8, 0], [9, 10, 0, 1, 1]])
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    for num_beams in (1, 4):
        np.testing.assert_array_equal(np.asarray(fused.generate(ids, mask, num_beams=num_beams, max_new_tokens=6)),
                                      np.asarray(plain.generate(ids, mask, num_beams=num_beams, max_new_tokens=6)))


GELU = """# tensorvm ir 1
def main(x: Tensor) -> tuple[Tensor, Tensor]:
    w = param("w")
    b = param("b")
    lin_0 = linear(x, w, b)
    exact = gelu(lin_0)
    lin_1 = linear(exact, w, b)
    approx = gelu(lin_1, approximate="tanh")
    return exact, approx
"""


def test_exact_gelu_fuses_and_the_tanh_approximation_does_not(rng):
    out, _ = PassManager([("fuse", fuse), ("dce", dce)]).run(check(GELU))
    text = body(out)
    assert 'exact = linear_act(x, w, b, "gelu")' in text
    assert "lin_1 = linear(exact, w, b)" in text and any(s.startswith("approx = gelu(lin_1") for s in text)
    w = weights(rng)
    x = rng.standard_normal((5, 8)).astype(np.float32)
    for a, b in zip(Replayer(text=GELU, weights=w).run("main", x), Replayer(text=str(out), weights=w).run("main", x)):
        np.testing.assert_array_equal(a, b)
