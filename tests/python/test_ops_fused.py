"""Fused ops (add_layer_norm, add_rms_norm, linear_act): the C++ kernels against their
references, which are the two unfused ops one after the other (reference/ops/fused.py). The kernels must also agree bit for bit with the two C++ ops they replace,
since the fusion passes put them in a program's place."""
import numpy as np
import pytest

from tensorvm._C import call_op
from op_checks import check, check_error, check_signature, vm_call
from pyc_helpers import f32

# Every kernel variant this CPU runs (conftest.py): linear_act's epilogue is the variant's.
pytestmark = pytest.mark.usefixtures("kernel_variant")


@pytest.mark.parametrize("name,group", [("add_layer_norm", "nn"), ("add_rms_norm", "nn"),
                                        ("linear_act", "linear algebra")])
def test_signature_matches_reference(name, group):
    check_signature(name, group)


# ---------------------------------------------------------------- add + norm

@pytest.mark.parametrize("shape", [(5,), (3, 8), (2, 3, 16), (2, 4, 512), (1, 1)])
def test_add_layer_norm_random(rng, shape):
    x, r = f32(rng, *shape, scale=3.0), f32(rng, *shape) + 2.0
    d = shape[-1]
    w, b = f32(rng, d), f32(rng, d)
    for args, kw in [((x, r), {}), ((x, r, w, b), {}), ((x, r, w), {}), ((x, r, None, b), {"eps": 0.5})]:
        got = check("add_layer_norm", *args, **kw)
        unfused = call_op("layer_norm", call_op("add", x, r), *args[2:], **kw)
        np.testing.assert_array_equal(got, unfused)


@pytest.mark.parametrize("shape", [(5,), (3, 8), (2, 4, 512)])
def test_add_rms_norm_random(rng, shape):
    x, r, w = f32(rng, *shape, scale=2.0), f32(rng, *shape), f32(rng, shape[-1])
    for args, kw in [((x, r), {}), ((x, r, w), {}), ((x, r, w), {"eps": 1e-2})]:
        got = check("add_rms_norm", *args, **kw)
        np.testing.assert_array_equal(got, call_op("rms_norm", call_op("add", x, r), *args[2:], **kw))


@pytest.mark.parametrize("name", ["add_layer_norm", "add_rms_norm"])
def test_add_norm_broadcast_scalar_and_views(rng, name):
    # What add accepts beyond two tensors of one shape goes through add itself.
    x = f32(rng, 3, 8)
    check(name, x, f32(rng, 8))
    check(name, f32(rng, 1, 8), x)
    check(name, x, 1.5)
    check(name, 2, x)
    w = f32(rng, 8)
    np.testing.assert_array_equal(vm_call(name, x.T.copy().T, x), call_op(name, x, x))
    check(name, x, x, w)


@pytest.mark.parametrize("name", ["add_layer_norm", "add_rms_norm"])
def test_add_norm_edges(rng, name):
    check(name, np.zeros((0, 8), np.float32), np.zeros((0, 8), np.float32))
    check(name, np.zeros((3, 0), np.float32), np.zeros((3, 0), np.float32))
    big = f32(rng, 4, 32, scale=1e30)
    assert np.isfinite(check(name, big, -big * 0.5)).all()
    x = f32(rng, 2, 16)
    x[0, 3] = np.nan
    x[1, 5] = np.inf
    with np.errstate(invalid="ignore"):
        check(name, x, f32(rng, 2, 16))
    check(name, np.full((2, 7), 3.0, np.float32), np.full((2, 7), 1.0, np.float32))


def test_add_norm_errors(rng):
    x = f32(rng, 3, 4)
    check_error("add_layer_norm", x, f32(rng, 5), match="add: ")
    check_error("add_layer_norm", x.astype(np.int64), x.astype(np.int64), match="must be an f32 tensor",
                ref_match="x must be f32")
    check_error("add_layer_norm", np.ones((), np.float32), np.ones((), np.float32), match="at least 1 dimension")
    check_error("add_layer_norm", x, x, f32(rng, 5), match=r"weight must be f32\[4\]")
    check_error("add_layer_norm", x, x, None, f32(rng, 4).astype(np.int32), match=r"bias must be f32\[4\]")
    check_error("add_layer_norm", x, x, eps=-1.0, match="eps")
    check_error("add_rms_norm", x, x, f32(rng, 3), match=r"weight must be f32\[4\]")
    check_error("add_rms_norm", x, x, eps=-1.0, match="eps")


# ---------------------------------------------------------------- linear + activation

# Row counts on both sides of the streaming kernels' limit (32), so both paths (and their
# epilogue) run; output widths that are not a multiple of any vector width.
@pytest.mark.parametrize("act", ["relu", "sigmoid", "silu", "gelu"])
@pytest.mark.parametrize("shape,outf", [((3, 16), 6), ((2, 5, 64), 37), ((40, 64), 200), ((4,), 3), ((0, 8), 5)])
def test_linear_act_random(rng, act, shape, outf):
    x = f32(rng, *shape, scale=2.0)
    w, b = f32(rng, outf, shape[-1]), f32(rng, outf)
    for bias in (b, None):
        got = check("linear_act", x, w, bias, act, atol=1e-5)
        np.testing.assert_array_equal(got, call_op(act, call_op("linear", x, w, bias)))
        np.testing.assert_array_equal(vm_call_args("linear_act", x, w, bias, act, num_threads=2), got)


def vm_call_args(op, x, w, b, act, num_threads):
    # The interpreter on several threads (output features split over them): the epilogue
    # runs per slice, and must give what one thread gives.
    from tensorvm._C import Program, Session

    text = (f"# tensorvm ir 1\ndef f(x: Tensor, w: Tensor, b: Any) -> Tensor:\n"
            f"    y = {op}(x, w, b, \"{act}\")\n    return y\n")
    return np.asarray(Session(Program.from_text(text, ""), num_threads).run("f", [x, w, b])[0])


@pytest.mark.parametrize("act", ["relu", "sigmoid", "silu", "gelu"])
def test_linear_act_edges(rng, act):
    x = np.array([[0.0, -0.0, 1e30, -1e30, np.nan, np.inf, -np.inf, 3.0]], np.float32)
    w = np.eye(8, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        check("linear_act", x, w, None, act)
    check("linear_act", np.zeros((3, 0), np.float32), np.zeros((2, 0), np.float32), np.ones(2, np.float32), act)


def test_linear_act_errors(rng):
    x, w = f32(rng, 3, 4), f32(rng, 5, 4)
    check_error("linear_act", x, w, None, "tanh", match='activation must be "relu", "sigmoid", "silu" or "gelu"')
    check_error("linear_act", x, f32(rng, 5, 3), None, "silu", match="weight", ref_match="does not match")
    check_error("linear_act", x, w, f32(rng, 4), "silu", match=r"bias must be f32\[5\]")


# ---------------------------------------------------------------- log_softmax + ban

def test_log_softmax_masked_signature():
    check_signature("log_softmax_masked", "reduction")


@pytest.mark.parametrize("shape", [(7,), (3, 11), (2, 4, 33), (32, 1000), (0, 5), (1, 1)])
@pytest.mark.parametrize("threads", [1, 2])
def test_log_softmax_masked_is_log_softmax_then_masked_fill(rng, shape, threads):
    """Bit for bit the two C++ ops it replaces in beam search, on random scores, rows with
    -inf (earlier processors) and a row of NaN; banned tokens none, one, several, all."""
    x = f32(rng, *shape, scale=4.0)
    if x.ndim > 1 and x.shape[0] > 1 and x.shape[-1] > 2:
        x[0, 1] = -np.inf
        x[1] = np.nan
    V = shape[-1]
    for banned in [np.zeros(V, bool), np.eye(1, V, V // 2, dtype=bool)[0], rng.random(V) < 0.3, np.ones(V, bool)]:
        got = vm_call("log_softmax_masked", x, banned, num_threads=threads)
        unfused = call_op("masked_fill", call_op("log_softmax", x, -1), banned, -np.inf)
        np.testing.assert_array_equal(got, unfused)
        check("log_softmax_masked", x, banned)


def test_log_softmax_masked_errors(rng):
    x = f32(rng, 3, 5)
    check_error("log_softmax_masked", x, np.zeros(4, bool), match=r"banned must be bool \[5\]")
    check_error("log_softmax_masked", x, np.zeros(5, np.int64), match=r"banned must be bool \[5\]")
    check_error("log_softmax_masked", x, np.zeros((3, 5), bool), match=r"banned must be bool \[5\]")
    check_error("log_softmax_masked", x.astype(np.int64), np.zeros(5, bool), match="x must be f32")
