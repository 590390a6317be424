"""Tracing with ProgramBuilder: names, types, calls, control flow, eager modes and errors."""
import inspect

import numpy as np
import pytest

import tensorvm
from tensorvm import Tensor, TracingError
from tensorvm import ops as T
from tensorvm.pycompiler import registry
from tensorvm.pycompiler.ir_check import check

from pyc_helpers import reference_fallbacks  # noqa: F401 (fixture)


def body(text, fn):
    """The statement lines of function `fn` in a printed program."""
    lines = text.split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith(f"def {fn}("))
    out = []
    for l in lines[start + 1:]:
        if not l.startswith("    "):
            break
        out.append(l.strip())
    return out


def signature(text, fn):
    return next(l for l in text.split("\n") if l.startswith(f"def {fn}("))


# ---------------------------------------------------------------- op front-end


def test_ops_module_has_every_registry_op_with_signature_and_doc():
    for name, spec in registry.real_ops().items():
        f = getattr(T, name)
        assert f.__name__ == name
        assert str(f.__signature__).startswith("(")
        assert spec.signature_text in f.__doc__
    lin = inspect.signature(T.linear)
    assert list(lin.parameters) == ["x", "weight", "bias"]
    assert lin.parameters["bias"].default is None
    assert "linear" in T.__all__ and "param" in T.__all__
    with pytest.raises(AttributeError, match="no op 'frobnicate'"):
        T.frobnicate


def test_variadic_op_signature():
    if "concat" not in registry.real_ops():
        pytest.skip("no concat op")
    sig = inspect.signature(T.concat)
    kinds = [p.kind for p in sig.parameters.values()]
    assert kinds == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.KEYWORD_ONLY]


def test_eager_modes_dispatch(rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    y_cpp = T.linear(x, w)
    with tensorvm.mode("reference"):
        assert tensorvm.current_mode() == "reference"
        y_ref = T.linear(x, w)
        with tensorvm.mode("cpp"):
            assert tensorvm.current_mode() == "cpp"
    assert tensorvm.current_mode() == "cpp"
    np.testing.assert_allclose(y_cpp, y_ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="unknown mode"):
        with tensorvm.mode("torch"):
            pass
    with pytest.raises(tensorvm.VMError, match="linear"):
        T.linear(x, w.T.copy())


def test_eager_param_reads_bound_weights(rng):
    w = {"a.0.w": np.ones(2, np.float32), "a.1.w": np.zeros(2, np.float32), "b": np.full(2, 3, np.float32)}
    with pytest.raises(KeyError, match="tensorvm.weights"):
        T.param("b")
    with tensorvm.weights(w):
        assert T.param("a.{}.w", 1).tolist() == [0, 0]
        assert T.param("a.{}.w", np.int64(0)).tolist() == [1, 1]
        with tensorvm.weights({"b": np.zeros(1, np.float32)}):
            assert T.param("b").shape == (1,)
            assert T.param("a.{}.w", 0).shape == (2,)  # outer binding still visible
        assert T.param("b").shape == (2,)
        with pytest.raises(KeyError, match="no weight named 'nope'"):
            T.param("nope")
        with pytest.raises(ValueError, match="needs an index"):
            T.param("a.{}.w")
        with pytest.raises(ValueError, match="exactly one"):
            T.param("b", 1)
        with pytest.raises(TypeError, match="must be an int"):
            T.param("a.{}.w", 1.5)


# ---------------------------------------------------------------- tracing basics


def _ffn_builder(rng):
    weights = {f"layers.{i}.fc.{k}": rng.standard_normal((4, 4) if k == "weight" else 4).astype(np.float32)
               for i in range(3) for k in ("weight", "bias")}
    pb = tensorvm.ProgramBuilder(weights=weights, meta={"name": "ffn"})

    @pb.function
    def layer(x: Tensor, i: int) -> Tensor:
        h = T.linear(x, T.param("layers.{}.fc.weight", i), T.param("layers.{}.fc.bias", i))
        return T.silu(h)

    @pb.function
    def forward(x: Tensor) -> Tensor:
        for i in range(3):
            x = layer(x, i)
        return x

    return pb, layer, forward


def test_function_traced_once_called_many_times(rng):
    pb, layer, forward = _ffn_builder(rng)
    text = str(pb.program())
    assert text.count("def layer(") == 1
    assert body(text, "forward") == ["layer_0 = layer(x, 0)", "layer_1 = layer(layer_0, 1)",
                                     "layer_2 = layer(layer_1, 2)", "return layer_2"]
    assert body(text, "layer") == ['fc_weight = param("layers.{}.fc.weight", i)', 'fc_bias = param("layers.{}.fc.bias", i)',
                                   "linear_0 = linear(x, fc_weight, fc_bias)", "silu_0 = silu(linear_0)", "return silu_0"]
    check(text)
    assert pb.used_weights() == [f"layers.{i}.fc.{k}" for k in ("weight", "bias") for i in range(3)]
    assert text == str(pb.program())  # deterministic, and program() can be called again


def test_eager_call_runs_python_with_builder_weights(rng):
    pb, layer, forward = _ffn_builder(rng)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    y = forward(x)
    want = x
    for i in range(3):
        h = want @ pb.weights[f"layers.{i}.fc.weight"].T + pb.weights[f"layers.{i}.fc.bias"]
        want = h / (1 + np.exp(-h))
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_names_avoid_ops_functions_keywords_and_builtins():
    pb = tensorvm.ProgramBuilder()

    @pb.function(arg_types=[Tensor, Tensor])
    def add(linear, lambda_):  # a function named like an op, a parameter named like an op
        return T.linear(linear, lambda_)

    @pb.function
    def linear_0(x: Tensor) -> Tensor:  # a function named like a generated local
        return add(x, x)

    def weird(x, param, inf, Tensor, __init__, é):
        return T.linear(x, param)

    weird_pf = pb.function(weird, arg_types=["Tensor"] * 6)
    text = str(pb.program())
    check(text)
    assert signature(text, "add_1") == "def add_1(linear_1: Tensor, lambda_: Tensor) -> Tensor:"
    assert body(text, "add_1")[0] == "linear_0_1 = linear(linear_1, lambda_)"
    assert "def linear_0(x: Tensor) -> Tensor:" in text
    sig = signature(text, "weird")
    assert sig == "def weird(x: Tensor, param_1: Tensor, inf_1: Tensor, Tensor_1: Tensor, init: Tensor, _: Tensor) -> Tensor:"
    assert weird_pf.name == "weird"


def test_return_forms_and_types():
    pb = tensorvm.ProgramBuilder()

    @pb.function
    def many(x: Tensor, n: int, f: float, b: bool, s: str) -> tuple[Tensor, int, float, bool, str]:
        return x, n, f, b, s

    @pb.function
    def lits(x: Tensor) -> tuple[int, float, bool, str]:
        return -3, 2.5, True, "done"

    @pb.function
    def one(x: Tensor) -> tuple[Tensor]:
        return (x,)

    @pb.function
    def none(x: Tensor) -> None:
        pass

    @pb.function
    def caller(x: Tensor) -> Tensor:
        (a,) = one(x)
        y, n, f, b, s = many(a, 1, 2.0, False, "s")
        return y

    text = str(pb.program())
    check(text)
    assert signature(text, "many") == "def many(x: Tensor, n: int, f: float, b: bool, s: str) -> tuple[Tensor, int, float, bool, str]:"
    assert body(text, "lits") == ['return -3, 2.5, True, "done"']
    # One value is returned bare in the IR (as the VM and the replay both return it).
    assert signature(text, "one") == "def one(x: Tensor) -> Tensor:"
    assert signature(text, "none") == "def none(x: Tensor) -> None:" and body(text, "none") == ["return"]
    assert body(text, "caller")[:2] == ["one_0 = one(x)", 'many_0, many_1, many_2, many_3, many_4 = many(one_0, 1, 2.0, False, "s")']


def test_any_outputs_are_inferred():
    pb = tensorvm.ProgramBuilder()
    seen = {}

    @pb.function
    def f(x: Tensor, n: int, g: float, b: bool) -> Tensor:
        seen["int+int"] = T.add(n, 1).type
        seen["int/int"] = T.div(n, 2).type
        seen["int*float"] = T.mul(n, g).type
        seen["int<int"] = T.lt(n, 3).type
        seen["bool&bool"] = T.logical_and(b, True).type
        seen["tensor+int"] = T.add(x, n).type
        seen["operator"] = (n + 1).type
        seen["rsub"] = (1.5 - n).type
        seen["neg"] = (-n).type
        seen["cmp"] = (n >= g).type
        seen["shape"] = T.shape(x).type if "shape" in registry.real_ops() else "ints"
        seen["item"] = T.item(x).type if "item" in registry.real_ops() else "Any"
        seen["if_none"] = T.if_none(None, n).type if "if_none" in registry.real_ops() else "int"
        return x

    pb.program()
    assert seen == {"int+int": "int", "int/int": "float", "int*float": "float", "int<int": "bool", "bool&bool": "bool",
                    "tensor+int": "Tensor", "operator": "int", "rsub": "float", "neg": "int", "cmp": "bool",
                    "shape": "ints", "item": "Any", "if_none": "int"}


def test_types_from_arg_types_and_call_sites():
    pb = tensorvm.ProgramBuilder()

    @pb.function(arg_types={"n": int})
    def g(x, n):  # x's type comes from the first call
        return T.mul(x, n)

    @pb.function(arg_types=["Tensor"])
    def f(x):
        return g(x, 2)

    text = str(pb.program())
    assert signature(text, "f") == "def f(x: Tensor) -> Tensor:"
    assert signature(text, "g") == "def g(x: Tensor, n: int) -> Tensor:"

    pb2 = tensorvm.ProgramBuilder()

    @pb2.function
    def untyped(x):
        return x

    with pytest.raises(TracingError, match="parameter 'x' has no type"):
        pb2.program()


def test_lists_with_traced_ints():
    if "reshape" not in registry.real_ops() or "size" not in registry.real_ops():
        pytest.skip("needs reshape and size")
    pb = tensorvm.ProgramBuilder()

    @pb.function
    def f(x: Tensor, h: int) -> Tensor:
        b = T.size(x, 0)
        return T.reshape(x, [b, -1, h, np.int64(4)])

    text = str(pb.program())
    assert "reshape_0 = reshape(x, [size_0, -1, h, 4])" in text


# ---------------------------------------------------------------- control flow


def _loop_builder():
    pb = tensorvm.ProgramBuilder(weights={"w": (np.eye(3) * 2).astype(np.float32)})

    @pb.function
    def count(limit: int, x: Tensor) -> tuple[int, Tensor]:
        def going(i, acc, lim):
            return i < lim

        def step(i, acc, lim):
            return i + 1, T.linear(acc, T.param("w")), lim

        i, acc, _ = tensorvm.while_loop(going, step, 0, x, limit)
        y = tensorvm.cond(i > 3, lambda a: T.mul(a, 2.0), lambda a: T.neg(a), acc)
        return i, y

    return pb, count


def test_while_loop_and_cond_trace_to_functions():
    pb, count = _loop_builder()
    text = str(pb.program())
    check(text)
    assert body(text, "count") == [
        "add_0 = add(0, 0)",
        "while_loop_0, while_loop_1, while_loop_2 = while_loop(going, step, add_0, x, limit)",
        "gt_0 = gt(while_loop_0, 3)",
        "cond_0 = cond(gt_0, cond_then, cond_else, while_loop_1)",
        "return while_loop_0, cond_0"]
    assert signature(text, "going") == "def going(i: int, acc: Tensor, lim: int) -> bool:"
    assert signature(text, "step") == "def step(i: int, acc: Tensor, lim: int) -> tuple[int, Tensor, int]:"
    assert signature(text, "cond_then") == "def cond_then(a: Tensor) -> Tensor:"


def test_while_loop_and_cond_eager():
    pb, count = _loop_builder()
    x = np.ones((1, 3), np.float32)
    i, y = count(5, x)
    assert i == 5 and y.tolist() == [[64, 64, 64]]
    i, y = count(2, x)
    assert i == 2 and y.tolist() == [[-4, -4, -4]]
    assert tensorvm.while_loop(lambda a: a < 3, lambda a: a + 1, 0) == (3,)
    assert tensorvm.cond(np.array([True]), lambda a: a, lambda a: -a, 2) == 2
    with pytest.raises(TypeError, match="bool"):
        tensorvm.cond(1, lambda: 1, lambda: 2)
    with pytest.raises(TypeError, match="as many values"):
        tensorvm.while_loop(lambda a, b: a < 3, lambda a, b: (a + 1,), 0, 1)


def test_single_carried_value_and_literal_carried():
    pb = tensorvm.ProgramBuilder()

    @pb.function
    def f(x: Tensor) -> tuple[Tensor, bool, float]:
        (y,) = tensorvm.while_loop(lambda a: False, lambda a: a, x)
        b, g = tensorvm.while_loop(lambda b, g: b, lambda b, g: (False, g * 2.0), True, 1.5)
        return y, b, g

    text = str(pb.program())
    check(text)
    assert "while_loop_0, = while_loop(while_cond, while_body, x)" in text
    assert body(text, "f")[1:3] == ["logical_and_0 = logical_and(True, True)", "add_0 = add(1.5, 0.0)"]


def test_cond_with_concrete_predicate_inlines_the_branch():
    pb = tensorvm.ProgramBuilder()

    @pb.function
    def f(x: Tensor) -> Tensor:
        return tensorvm.cond(True, lambda a: T.neg(a), lambda a: T.mul(a, 2.0), x)

    assert body(str(pb.program()), "f") == ["neg_0 = neg(x)", "return neg_0"]


def test_program_function_as_loop_body():
    pb = tensorvm.ProgramBuilder()

    @pb.function
    def keep_going(i: int, n: int) -> bool:
        return i < n

    @pb.function
    def step(i: int, n: int) -> tuple[int, int]:
        return i + 1, n

    @pb.function
    def run(n: int) -> int:
        i, _ = tensorvm.while_loop(keep_going, step, 0, n)
        return i

    text = str(pb.program())
    assert text.count("def step(") == 1 and "while_loop(keep_going, step, add_0, n)" in text
    assert run(4) == 4


# ---------------------------------------------------------------- errors


def test_errors_are_clear():
    pb = tensorvm.ProgramBuilder(weights={"w": np.ones((2, 2), np.float32)})

    @pb.function
    def branch_on_var(x: Tensor, n: int) -> Tensor:
        if n > 1:
            return x
        return x

    with pytest.raises(TracingError, match="traced value.*tensorvm.cond"):
        pb.program()

    for make, match in [
        (lambda pb: pb.function(lambda x: T.linear(x, np.ones((2, 2), np.float32)), arg_types=[Tensor]), "concrete array"),
        (lambda pb: pb.function(lambda x: T.linear(x), arg_types=[Tensor]), "missing a required argument"),
        (lambda pb: pb.function(lambda x: T.linear(x, x, 3), arg_types=[Tensor]), "argument 'bias' takes Tensor\\?, got int"),
        (lambda pb: pb.function(lambda x: T.linear(x, x, bais=x), arg_types=[Tensor]), "unexpected keyword"),
        (lambda pb: pb.function(lambda n: T.param("w", n), arg_types=[int]), "exactly one '{}'"),
        (lambda pb: pb.function(lambda n: T.param("l.{}.w", 1.5), arg_types=[int]), "must be an int"),
        (lambda pb: pb.function(lambda x: [x], arg_types=[Tensor]), "tuple, not a list"),
        (lambda pb: pb.function(lambda x: T.reshape(x, list(range(9))), arg_types=[Tensor]), "at most 8"),
        (lambda pb: pb.function(lambda x: T.add(x, 2**63), arg_types=[Tensor]), "int64"),
        (lambda pb: pb.function(lambda x: T.add(x, object()), arg_types=[Tensor]), "cannot record"),
        (lambda pb: pb.function(lambda x: float(x), arg_types=[Tensor]), "no Python float"),
        (lambda pb: pb.function(lambda x: x[0], arg_types=[Tensor]), "indexing"),
        (lambda pb: pb.function(lambda x: list(x), arg_types=[Tensor]), "iterated"),
        (lambda pb: pb.function(lambda x: np.exp(x), arg_types=[Tensor]), "numpy.exp got the traced value x"),
        (lambda pb: pb.function(lambda x: np.ones(2, np.float32) + x, arg_types=[Tensor]), "numpy.add got the traced"),
        (lambda pb: pb.function(lambda x: x * np.ones(2, np.float32), arg_types=[Tensor]), "concrete array"),
    ]:
        pb = tensorvm.ProgramBuilder(weights={"w": np.ones((2, 2), np.float32)})
        make(pb)
        with pytest.raises((TracingError, TypeError), match=match):
            pb.program()


def test_values_cannot_cross_functions():
    pb = tensorvm.ProgramBuilder()

    @pb.function
    def f(x: Tensor, n: int) -> Tensor:
        def body(i):
            return (T.add(i, n),)  # n belongs to f, not to the loop body

        tensorvm.while_loop(lambda i: i < 3, body, 0)
        return x

    with pytest.raises(TracingError, match=r"n belongs to function 'f'.*pass it in"):
        pb.program()

    pb = tensorvm.ProgramBuilder()
    leaked = []

    @pb.function
    def g(x: Tensor) -> Tensor:
        leaked.append(x)
        return x

    pb.program()
    with pytest.raises(TracingError, match="finished trace"):
        T.neg(leaked[0])


def test_recursion_and_none_calls_are_refused():
    pb = tensorvm.ProgramBuilder()

    @pb.function
    def f(x: Tensor) -> Tensor:
        return f(x)

    with pytest.raises(TracingError, match="recursion"):
        pb.program()

    pb = tensorvm.ProgramBuilder()

    @pb.function
    def nothing(x: Tensor) -> None:
        return None

    @pb.function
    def g(x: Tensor) -> Tensor:
        nothing(x)
        return x

    with pytest.raises(TracingError, match="returns nothing"):
        pb.program()


def test_loop_body_type_mismatch():
    pb = tensorvm.ProgramBuilder()

    @pb.function
    def f(x: Tensor) -> Tensor:
        (y,) = tensorvm.while_loop(lambda a: True, lambda a: 1, x)
        return y

    with pytest.raises(TracingError, match="value 0 is int, expected Tensor"):
        pb.program()

    pb = tensorvm.ProgramBuilder()

    @pb.function
    def g(x: Tensor, p: bool) -> Tensor:
        return tensorvm.cond(p, lambda a: a, lambda a: (a, a), x)

    with pytest.raises(TracingError, match="different numbers of values"):
        pb.program()


def test_declared_return_is_checked():
    pb = tensorvm.ProgramBuilder()

    @pb.function
    def f(x: Tensor) -> int:
        return x

    with pytest.raises(TracingError, match="value 0 is Tensor, expected int"):
        pb.program()


def test_used_weights_only_and_missing_weights():
    w = {f"l.{i}.w": np.ones((2, 2), np.float32) for i in range(4)}
    w["unused"] = np.zeros(3, np.float32)
    w["l.x.w"] = np.zeros(3, np.float32)
    pb = tensorvm.ProgramBuilder(weights=w)

    @pb.function
    def f(x: Tensor, i: int) -> Tensor:
        return T.linear(T.linear(x, T.param("l.{}.w", i)), T.param("l.{}.w", 2))

    assert pb.used_weights() == ["l.0.w", "l.1.w", "l.2.w", "l.3.w"]

    pb = tensorvm.ProgramBuilder(weights=w)

    @pb.function
    def g(x: Tensor) -> Tensor:
        return T.linear(x, T.param("missing.weight"))

    with pytest.raises(KeyError, match="missing.weight"):
        pb.used_weights()


def test_stand_in_ops_trace_and_run_eagerly():
    spec = registry.make_stand_in("twice(x: Tensor, k: float = 2.0) -> same", lambda x, k=2.0: x * k)
    with registry.stand_ins([spec]):
        assert T.twice(np.ones(2, np.float32)).tolist() == [2, 2]
        pb = tensorvm.ProgramBuilder()

        @pb.function
        def f(x: Tensor) -> Tensor:
            return T.twice(x, k=3.0)

        assert body(str(pb.program()), "f") == ["twice_0 = twice(x, k=3.0)", "return twice_0"]
    with pytest.raises(AttributeError):
        T.twice


# ---------------------------------------------------------------- objects and package


@pytest.mark.skipif(bool(set(("kv_cache", "kv_append", "kv_length")) - set(registry.real_ops())), reason="needs kv ops")
def test_object_types_from_annotations_and_outputs():
    from tensorvm.pycompiler.types import ObjectType

    pb = tensorvm.ProgramBuilder()

    @pb.function
    def init(n: int) -> "KVCache":
        return T.kv_cache(1, 1, 1, 2, n)

    @pb.function
    def push(cache: ObjectType("KVCache"), k: Tensor) -> tuple["KVCache", int, Tensor]:
        ka, va = T.kv_append(cache, 0, k, k)
        return cache, T.kv_length(cache), ka

    text = str(pb.program())
    check(text)
    assert signature(text, "init") == "def init(n: int) -> KVCache:"
    assert signature(text, "push") == "def push(cache: KVCache, k: Tensor) -> tuple[KVCache, int, Tensor]:"
    assert body(text, "push") == ["kv_append_0, kv_append_1 = kv_append(cache, 0, k, k)", "kv_length_0 = kv_length(cache)",
                                  "return cache, kv_length_0, kv_append_0"]
    k = np.ones((1, 1, 1, 2), np.float32)
    for mode in ("cpp", "reference"):
        with tensorvm.mode(mode):
            c = init(3)
            push(c, k)
            assert push(c, k)[1] == 2


def test_package_api_and_import_without_torch():
    import subprocess
    import sys

    assert {"load", "replay", "export", "ProgramBuilder", "while_loop", "cond", "mode", "weights", "ops",
            "VMError", "Tensor"} <= set(tensorvm.__all__)
    code = ("import sys, tensorvm; from tensorvm import ops as T; "
            "assert 'torch' not in sys.modules and 'safetensors' not in sys.modules, sorted(sys.modules); print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
