"""Graph passes: each removes what it should, keeps what has effects, and the program
computes the same before and after (replayed on the reference ops, and in the VM)."""
import numpy as np
import pytest

import tensorvm
from tensorvm import reference
from tensorvm.pycompiler import ir
from tensorvm.pycompiler.cli import main
from tensorvm.pycompiler.passes import DEFAULT_PASSES, PassManager, count_statements, cse, dce, fold, optimize
from tensorvm.pycompiler.program_dir import write_program_dir
from tensorvm.pycompiler.replay import Replayer, check

from pyc_helpers import requires_vm

TEXT = """# tensorvm ir 1
def twice(x: Tensor) -> Tensor:
    mul_0 = mul(x, 2.0)
    return mul_0

def more(i: int, x: Tensor) -> bool:
    lt_0 = lt(i, 3)
    return lt_0

def step(i: int, x: Tensor) -> tuple[int, Tensor]:
    add_0 = add(i, 1)
    tanh_0 = tanh(x)
    return add_0, tanh_0

def main(x: Tensor, kv: Tensor, cache: KVCache) -> tuple[Tensor, int]:
    add_0 = add(3, 4)
    mul_0 = mul(add_0, 2)
    w = param("w")
    linear_0 = linear(x, w)
    w_1 = param("w")
    linear_1 = linear(x, w_1)
    exp_0 = exp(linear_0)
    exp_1 = exp(linear_1)
    dead_0 = tanh(exp_0)
    dead_1 = twice(dead_0)
    loop_0, loop_1 = while_loop(more, step, 0, x)
    k_0, v_0 = kv_append(cache, 0, kv, kv)
    ok_0 = check(True, "never fails")
    m_0 = mul(x, 1)
    m_1 = mul(x, 1.0)
    size_0 = size(x, 0)
    size_1 = size(x, 0)
    reshape_0 = reshape(exp_1, [size_1, 4])
    sum_0 = add(exp_0, reshape_0)
    sum_1 = add(sum_0, m_1)
    sum_2 = add(sum_1, m_0)
    add_1 = add(mul_0, size_0)
    return sum_2, add_1
"""


def module():
    return check(TEXT)


def body(m, fn="main"):
    return [ir.print_stmt(s) for s in m.function(fn).body]


def test_fold_computes_scalar_ops_of_literals():
    m = module()
    assert fold(m) == 2  # add(3, 4) and then mul(7, 2)
    text = body(m)
    assert "add_1 = add(14, size_0)" in text and not any(s.startswith(("add_0 =", "mul_0 =")) for s in text)
    assert "m_0 = mul(x, 1)" in text  # a tensor result stays


def test_cse_merges_same_op_same_arguments_only():
    m = module()
    assert cse(m) == 4  # w_1, linear_1, exp_1, size_1
    text = body(m)
    assert "reshape_0 = reshape(exp_0, [size_0, 4])" in text
    assert "m_0 = mul(x, 1)" in text and "m_1 = mul(x, 1.0)" in text  # an int and a float are not the same
    assert text.count("k_0, v_0 = kv_append(cache, 0, kv, kv)") == 1


def test_dce_keeps_effects():
    m = module()
    assert dce(m) == 3  # dead_1 (a pure call), then dead_0; the loop's results are unused too
    text = body(m)
    assert not any(s.startswith(("dead_0", "dead_1", "loop_0")) for s in text)
    assert "k_0, v_0 = kv_append(cache, 0, kv, kv)" in text  # changes the cache
    assert 'ok_0 = check(True, "never fails")' in text      # exists to fail


def test_an_impure_callee_keeps_its_call():
    text = TEXT.replace("    tanh_0 = tanh(x)\n", "    tanh_0 = tanh(x)\n    e_0 = emit(\"step\", tanh_0)\n")
    m = check(text)
    dce(m)
    assert any(s.startswith("loop_0, loop_1 = while_loop(") for s in body(m))


def test_manager_runs_to_a_fixpoint_and_leaves_its_input():
    m = module()
    before = str(m)
    out, stats = PassManager(DEFAULT_PASSES).run(m)
    assert str(m) == before
    assert stats.removed == {"fold": 2, "cse": 4, "dce": 3, "fuse": 0} and stats.before - stats.after == 9
    assert stats.rounds == 2
    _, again = optimize(out)
    assert again.before == again.after == stats.after
    check(str(out))


def test_replay_before_and_after_agree(rng):
    w = rng.standard_normal((4, 4)).astype(np.float32)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    out, _ = optimize(module())
    results = []
    for text in (TEXT, str(out)):
        r = Replayer(text=text, weights={"w": w})
        cache = reference.OPS["kv_cache"](1, 2, 1, 4, 8)
        results.append(r.run("main", x, x.reshape(2, 1, 1, 4), cache))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1] == 14 + 2


@requires_vm
def test_cli_optimize_and_the_vm_agree(tmp_path, rng, capsys):
    w = rng.standard_normal((4, 4)).astype(np.float32)
    src = write_program_dir(tmp_path / "a.tvm", TEXT, {"w": w}, {"model": "passes"})
    assert main(["optimize", str(src), "-o", str(tmp_path / "b.tvm")]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {tmp_path / 'b.tvm'}: 26 -> 17 statements (fold 2, cse 4, dce 3")
    a, b = tensorvm.load(src), tensorvm.load(tmp_path / "b.tvm")
    assert b.meta["model"] == "passes"
    x = rng.standard_normal((2, 4)).astype(np.float32)
    got = []
    for p in (a, b):
        cache = tensorvm._C.call_op("kv_cache", 1, 2, 1, 4, 8)
        got.append(p.run("main", x, x.reshape(2, 1, 1, 4), cache))
    np.testing.assert_array_equal(got[0][0], got[1][0])
    assert got[0][1] == got[1][1]
    assert main(["optimize", str(src), "-o", str(src)]) == 1
    assert main(["optimize", str(src), "-o", str(tmp_path / "c.tvm"), "--passes", "cse,nope"]) == 1
    assert "no pass 'nope'" in capsys.readouterr().err


@requires_vm
@pytest.mark.parametrize("num_beams", [1, 3])
def test_marian_generate_is_token_exact_after_the_passes(tmp_path, num_beams):
    import hf_reference as hf
    from tensorvm.pycompiler.import_hf import import_hf

    prog = tensorvm.load(import_hf(hf.checkpoint_dir("tiny-marian"), tmp_path / "traced.tvm", optimize=False))
    assert main(["optimize", str(prog.path), "-o", str(tmp_path / "opt.tvm")]) == 0
    opt = tensorvm.load(tmp_path / "opt.tvm")
    assert count_statements(opt.module) < count_statements(prog.module)
    ids = np.array([[5, 6, 7, 8, 0], [9, 10, 0, 1, 1]])
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    want = prog.generate(ids, mask, num_beams=num_beams, max_new_tokens=6)
    got = opt.generate(ids, mask, num_beams=num_beams, max_new_tokens=6)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    inputs = dict(input_ids=ids, attention_mask=mask, num_beams=num_beams, max_new_tokens=4)
    fn = prog.module.function("generate")
    args = [inputs.get(p.name) for p in fn.params]
    np.testing.assert_array_equal(opt.replay("generate", *args)[0], prog.replay("generate", *args)[0])


RULES_TEXT = """# tensorvm ir 1
def main(x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    softmax_0 = softmax(x, -1)
    log_0 = log(softmax_0)
    transpose_0 = transpose(x, 0, 1)
    transpose_1 = transpose(transpose_0, 0, 1)
    transpose_2 = transpose(transpose_0, 1, 0)
    exp_0 = exp(transpose_1)
    softmax_1 = softmax(x, 0)
    log_1 = log(softmax_1)
    tanh_0 = tanh(softmax_1)
    return log_0, exp_0, transpose_2, tanh_0
"""


def test_rules_rewrite_matches_only():
    from tensorvm.pycompiler.passes import rewrite_pass, standard_rules

    text = RULES_TEXT.replace("add(log_1, tanh_0)", "tanh_0").replace(
        "tuple[Tensor, Tensor, Tensor, Tensor]", "tuple[Tensor, Tensor, Tensor, Tensor, Tensor]").replace(
        "return log_0, exp_0, transpose_2, tanh_0", "return log_0, exp_0, transpose_2, tanh_0, log_1")
    m = check(text)
    out, stats = PassManager([("rewrite", rewrite_pass(standard_rules())), ("dce", dce)]).run(m)
    text = body(out)
    assert stats.removed["rewrite"] == 3
    assert "log_0 = log_softmax(x, -1)" in text and "log_1 = log_softmax(x, 0)" in text
    assert "exp_0 = exp(x)" in text                         # transpose twice with the same dims is x
    assert "transpose_2 = transpose(transpose_0, 1, 0)" in text  # not the same dims: no match
    assert "softmax_1 = softmax(x, 0)" in text and "softmax_0 = softmax(x, -1)" not in text  # still read by tanh
    w, rng = {}, np.random.default_rng(0)
    x = rng.standard_normal((3, 3)).astype(np.float32)
    before, after = Replayer(text=str(m), weights=w).run("main", x), Replayer(text=str(out), weights=w).run("main", x)
    for a, b in zip(before, after):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_rule_written_in_python():
    from tensorvm import ops as T
    from tensorvm.pycompiler.passes import rewrite_pass, rule

    double = rule(lambda x: T.mul(x, 2.0), lambda x: T.add(x, x), ("Tensor",), "double")
    m = check("# tensorvm ir 1\ndef f(x: Tensor) -> Tensor:\n    mul_0 = mul(x, 2.0)\n    mul_1 = mul(mul_0, 2)\n"
              "    return mul_1\n")
    out, stats = PassManager([("rewrite", rewrite_pass([double]))]).run(m)
    assert body(out, "f") == ["mul_0 = add(x, x)", "mul_1 = mul(mul_0, 2)", "return mul_1"]  # 2 is not 2.0
    with pytest.raises(ValueError, match="only use pure ops"):
        rule(lambda c, x: T.kv_append(c, 0, x, x)[0], lambda c, x: x, ("KVCache", "Tensor"))
