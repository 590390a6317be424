"""Replay: IR text executed as Python with the reference ops, after the grammar check."""
import traceback

import numpy as np
import pytest

import tensorvm
from tensorvm import Tensor
from tensorvm import ops as T
from tensorvm.pycompiler.ir_check import IRCheckError
from tensorvm.pycompiler.replay import Replayer

from pyc_helpers import reference_fallbacks, requires_vm, write_program  # noqa: F401 (fixture)

H = "# tensorvm ir 1\n"


def test_replay_hand_written_program(tmp_path, rng, reference_fallbacks):
    w = {"layers.0.w": rng.standard_normal((3, 3)).astype(np.float32),
         "layers.1.w": rng.standard_normal((3, 3)).astype(np.float32)}
    text = H + """def layer(x: Tensor, i: int) -> Tensor:
    w = param("layers.{}.w", i)
    y = linear(x, w)
    return y

def going(i: int, x: Tensor, n: int) -> bool:
    c = lt(i, n)
    return c

def step(i: int, x: Tensor, n: int) -> tuple[int, Tensor, int]:
    y = layer(x, i)
    j = add(i, 1)
    return j, y, n

def forward(x: Tensor, n: int) -> tuple[Tensor, int, float, str]:
    i0 = add(0, 0)
    i, y, m = while_loop(going, step, i0, x, n)
    pos = gt(i, 1)
    z = cond(pos, neg_fn, same_fn, y)
    return z, i, -inf, "done"

def neg_fn(x: Tensor) -> Tensor:
    y = neg(x)
    return y

def same_fn(x: Tensor) -> Tensor:
    y = mul(x, 1.0)
    return y
"""
    path = write_program(tmp_path / "p.tvm", text, w)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    z, i, f, s = tensorvm.replay(path, "forward", x, 2)
    want = -((x @ w["layers.0.w"].T) @ w["layers.1.w"].T)
    np.testing.assert_allclose(z, want, rtol=1e-5, atol=1e-5)
    assert (i, f, s) == (2, float("-inf"), "done")
    z1, i1, _, _ = tensorvm.replay(path, "forward", x, np.int64(1))
    np.testing.assert_allclose(z1, x @ w["layers.0.w"].T, rtol=1e-5, atol=1e-5)
    assert i1 == 1


def test_replay_matches_eager_reference(tmp_path, rng, reference_fallbacks):
    w = {f"l.{i}.w": rng.standard_normal((4, 4)).astype(np.float32) for i in range(3)}
    pb = tensorvm.ProgramBuilder(weights=w)

    @pb.function
    def layer(x: Tensor, i: int) -> Tensor:
        return T.silu(T.linear(x, T.param("l.{}.w", i)))

    @pb.function
    def forward(x: Tensor, n: int) -> Tensor:
        def going(i, h, n):
            return i < n

        def step(i, h, n):
            return i + 1, layer(h, i), n

        _, h, _ = tensorvm.while_loop(going, step, 0, x, n)
        return h

    x = rng.standard_normal((2, 4)).astype(np.float32)
    path = pb.save(tmp_path / "m.tvm")
    with tensorvm.mode("reference"):
        want = forward(x, 3)
    np.testing.assert_array_equal(tensorvm.replay(path, "forward", x, 3), want)


def test_replay_has_no_python_builtins(tmp_path):
    r = Replayer(text=H + "def f(x: Tensor) -> Tensor:\n    return x\n", weights={})
    ns = r.namespace
    assert ns["__builtins__"] == {}
    for name in ("print", "open", "exec", "eval", "__import__", "getattr", "len"):
        assert name not in ns
    assert set(k for k in ns if not k.startswith("__")) >= {"param", "while_loop", "cond", "inf", "nan", "Tensor", "f"}
    fn = ns["f"]
    assert fn.__globals__ is ns
    assert fn.__annotations__ == {"x": "Tensor", "return": "Tensor"}  # never evaluated


def test_hostile_program_is_refused_before_running(tmp_path):
    marker = tmp_path / "pwned"
    text = H + f'def f(x: Tensor) -> Tensor:\n    y = open("{marker}", "w")\n    return x\n'
    path = write_program(tmp_path / "p.tvm", text)
    with pytest.raises(IRCheckError, match="unknown op or function 'open'"):
        tensorvm.replay(path, "f", np.ones(1, np.float32))
    text = H + "import os\n"
    path2 = write_program(tmp_path / "q.tvm", text)
    with pytest.raises(IRCheckError, match="imports"):
        tensorvm.replay(path2, "f")
    assert not marker.exists()


def test_replay_errors_point_at_ir_lines(tmp_path, rng):
    text = H + "def f(x: Tensor, w: Tensor) -> Tensor:\n    y = linear(x, w)\n    return y\n"
    path = write_program(tmp_path / "p.tvm", text)
    with pytest.raises(Exception) as e:
        tensorvm.replay(path, "f", np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
    frames = [f for f in traceback.extract_tb(e.value.__traceback__) if f.filename.endswith("program.py")]
    assert frames and frames[-1].lineno == 3


def test_replay_missing_weight_and_reference(tmp_path):
    text = H + 'def f(x: Tensor) -> Tensor:\n    w = param("nope")\n    return w\n'
    path = write_program(tmp_path / "p.tvm", text)
    with pytest.raises(KeyError, match="no weight named 'nope'"):
        tensorvm.replay(path, "f", np.ones(1, np.float32))
    from dataclasses import replace

    from tensorvm.pycompiler import registry

    # An op the registry knows but tensorvm.reference does not implement.
    spec = replace(registry.make_stand_in("no_reference_op(x: Tensor) -> Tensor", None), reference=None)
    with registry.stand_ins([spec]):
        text = H + "def f(x: Tensor) -> Tensor:\n    y = no_reference_op(x)\n    return y\n"
        path = write_program(tmp_path / "q.tvm", text)
        with pytest.raises(NotImplementedError, match="op 'no_reference_op' has no reference implementation"):
            tensorvm.replay(path, "f", np.ones(1, np.float32))


def test_check_is_the_replay_check_without_running(tmp_path):
    text = H + "def f(x: Tensor) -> Tensor:\n    y = neg(x)\n    return y\n"
    module = tensorvm.check(text)
    assert module.function_names == ["f"] and str(module) == text
    assert str(tensorvm.check(text.encode())) == text
    marker = tmp_path / "pwned"
    with pytest.raises(IRCheckError) as e:
        tensorvm.check(H + f'def f(x: Tensor) -> Tensor:\n    y = open("{marker}", "w")\n    return x\n',
                       filename="mine.py")
    assert (e.value.filename, e.value.line) == ("mine.py", 3) and "unknown op or function 'open'" in e.value.message
    with pytest.raises(IRCheckError, match="invalid UTF-8"):
        tensorvm.check(H.encode() + b"\xff\n")
    assert not marker.exists()
    from dataclasses import replace

    from tensorvm.pycompiler import registry

    spec = replace(registry.make_stand_in("no_reference_op(x: Tensor) -> Tensor", None), reference=None)
    with registry.stand_ins([spec]):
        with pytest.raises(NotImplementedError, match="op 'no_reference_op' has no reference implementation"):
            tensorvm.check(H + "def f(x: Tensor) -> Tensor:\n    y = no_reference_op(x)\n    return y\n")


def test_replay_input_checks(tmp_path):
    text = H + "def f(x: Tensor, n: int) -> Tensor:\n    return x\n"
    path = write_program(tmp_path / "p.tvm", text)
    with pytest.raises(TypeError, match=r"f\(x: Tensor, n: int\) takes 2 inputs, got 1"):
        tensorvm.replay(path, "f", np.ones(1))
    with pytest.raises(TypeError, match="declared int"):
        tensorvm.replay(path, "f", np.ones(1), np.ones(2))
    out = tensorvm.replay(path, "f", [1, 2], np.array(3))
    assert isinstance(out, np.ndarray) and out.tolist() == [1, 2]
    with pytest.raises(KeyError, match="no function 'g'"):
        tensorvm.replay(path, "g")


@requires_vm
def test_vm_and_replay_agree_on_loops(tmp_path, reference_fallbacks):
    pb = tensorvm.ProgramBuilder()

    @pb.function
    def collatz(n: int) -> tuple[int, int]:
        def going(v, steps):
            return v > 1

        def step(v, steps):
            even = T.eq(T.mul(T.floordiv(v, 2), 2), v)
            nxt = tensorvm.cond(even, lambda v: T.floordiv(v, 2), lambda v: T.add(T.mul(v, 3), 1), v)
            return nxt, steps + 1

        return tensorvm.while_loop(going, step, n, 0)

    prog = tensorvm.load(pb.save(tmp_path / "c.tvm"))
    from tensorvm import reference

    if "floordiv" not in reference.OPS:
        reference.OPS["floordiv"] = lambda x, y: x // y
        added = True
    else:
        added = False
    try:
        for n in (1, 6, 27):
            assert prog.run("collatz", n) == prog.replay("collatz", n) == collatz(n)
        assert prog.run("collatz", 27) == (1, 111)
    finally:
        if added:
            reference.OPS.pop("floordiv")
