"""Custom ops registered from Python: traced into a program, run in the C++ VM (through
the Python kernel) and in replay with the same results; errors. The C++ side (an app's
own kernel, replacing a built-in one) is tested in tests/cpp/test_custom_ops.cpp."""
import threading

import numpy as np
import pytest

import tensorvm
from tensorvm import Tensor
from tensorvm import ops as T


@tensorvm.custom_op("py_scale_shift(x: Tensor, scale: float, shift: float = 0.0) -> Tensor")
def py_scale_shift(x, scale, shift=0.0):
    """x * scale + shift."""
    return (np.asarray(x) * np.float32(scale) + np.float32(shift)).astype(np.float32)


@tensorvm.custom_op("py_split_sum(x: Tensor) -> (Tensor, int)")
def py_split_sum(x):
    x = np.asarray(x)
    return x.sum(axis=-1).astype(np.float32), int(x.shape[-1])


def _program(tmp_path):
    pb = tensorvm.ProgramBuilder()

    @pb.function
    def f(x: Tensor) -> tuple[Tensor, int]:
        y = T.py_scale_shift(x, 2.0, shift=1.0)
        z = py_scale_shift(T.relu(y), 0.5)  # the decorated name is the op function too
        s, n = T.py_split_sum(z)
        return s, n

    path = tmp_path / "custom.tvm"
    pb.save(path)
    return path


def test_traced_custom_op_runs_in_the_vm_and_in_replay(tmp_path):
    path = _program(tmp_path)
    assert "py_scale_shift(x, 2.0, shift=1.0)" in (path / "program.py").read_text()
    x = np.arange(-6, 6, dtype=np.float32).reshape(3, 4) / 3
    prog = tensorvm.load(path)
    s_vm, n_vm = prog.run("f", x)
    s_ref, n_ref = prog.replay("f", x)
    want = (np.maximum(x * 2 + 1, 0) * 0.5).sum(-1)
    np.testing.assert_allclose(s_vm, want, rtol=1e-6)
    np.testing.assert_array_equal(s_vm, s_ref)
    assert n_vm == n_ref == 4


def test_python_kernel_runs_on_a_vm_thread_and_eagerly(tmp_path):
    path = _program(tmp_path)
    x = np.ones((2, 4), np.float32)
    results = []
    threads = [threading.Thread(target=lambda: results.append(tensorvm.load(path).run("f", x)[1])) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [4, 4, 4]
    np.testing.assert_array_equal(T.py_scale_shift(x, 3.0), x * 3)  # eager, C++ mode: the Python kernel
    with tensorvm.mode("reference"):
        np.testing.assert_array_equal(T.py_scale_shift(x, 3.0), x * 3)
    assert "x * scale + shift" in T.py_scale_shift.__doc__
    assert "py_scale_shift" in {d["name"] for d in tensorvm._C.registry()}


def test_errors():
    with pytest.raises(tensorvm.VMError, match="'py_scale_shift' is already registered"):
        tensorvm.register_op("py_scale_shift(x: Tensor) -> Tensor", lambda x: x)
    with pytest.raises(tensorvm.VMError, match="'relu' is already registered"):
        tensorvm.register_op("relu(x: Tensor) -> Tensor", lambda x: x)
    with pytest.raises(TypeError, match="not callable"):
        tensorvm.register_op("py_nothing(x: Tensor) -> Tensor", None)
    with pytest.raises(tensorvm.VMError, match="unknown kind 'tensor'"):
        tensorvm.register_op("py_bad_kind(x: tensor) -> Tensor", lambda x: x)

    @tensorvm.custom_op("py_fails(x: Tensor) -> Tensor")
    def py_fails(x):
        raise ValueError("no good")

    with pytest.raises(tensorvm.VMError, match=r"py_fails: the Python kernel raised ValueError: no good"):
        T.py_fails(np.ones(2, np.float32))
    vm_prog = tensorvm._C.Program.from_text("# tensorvm ir 1\ndef f(x: Tensor) -> Tensor:\n    y = py_fails(x)\n    return y\n")
    with pytest.raises(tensorvm.VMError, match=r"(?s)py_fails: the Python kernel raised ValueError: no good.*program.py:3"):
        tensorvm._C.Session(vm_prog).run("f", [np.ones(2, np.float32)])

    @tensorvm.custom_op("py_in_place(x: Tensor) -> Tensor")
    def py_in_place(x):
        x += 1  # would change the VM's tensor: its arrays are read-only
        return x

    with pytest.raises(tensorvm.VMError, match="py_in_place: the Python kernel raised ValueError: .*read-only"):
        T.py_in_place(np.ones(2, np.float32))
    with pytest.raises(tensorvm.VMError, match="register_op"):
        tensorvm._C.Program.from_text("# tensorvm ir 1\ndef f(x: Tensor) -> Tensor:\n    y = py_missing(x)\n    return y\n")
