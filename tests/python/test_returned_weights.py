"""A function output that is a weight, or a view of one, never comes back to Python as a
writeable array over the program's weights (docs/python.md, "Results"): over the read-only
mapping a write used to segfault, and over load_bytes' copy it silently changed the
weights of every later run. Computed outputs stay ordinary writeable arrays."""
import numpy as np
import pytest

import tensorvm
from tensorvm.pycompiler import weights_io

TEXT = """# tensorvm ir 1
def weight() -> Tensor:
    w = param("w")
    return w

def rows(i: int) -> Tensor:
    w = param("layers.{}.w", i)
    r = slice(w, 0, 1, 3)
    return r

def flat() -> Tensor:
    w = param("w")
    v = reshape(w, [6])
    return v

def doubled() -> Tensor:
    w = param("w")
    d = add(w, w)
    return d
"""

W = np.arange(6, dtype=np.float32).reshape(2, 3)
LAYER = np.arange(12, dtype=np.float32).reshape(4, 3)


def _save(path):
    path.mkdir()
    (path / "program.py").write_text(TEXT)
    weights_io.write(path / "weights.safetensors", {"w": W, "layers.0.w": LAYER, "layers.1.w": LAYER + 100})
    (path / "meta.json").write_text('{"format": "tensorvm-ir", "version": 1}')
    return path


def _loaded(tmp_path):
    d = _save(tmp_path / "w.tvm")
    yield "mapped", tensorvm.load(d)
    yield "copied", tensorvm.load(d, copy_weights=True)
    parts = [(d / f).read_bytes() for f in ("program.py", "weights.safetensors", "meta.json")]
    yield "load_bytes", tensorvm.load_bytes(*parts)


def _weight_outputs(prog):
    return {"weight": (prog.run("weight"), W), "rows": (prog.run("rows", 1), LAYER[1:3] + 100),
            "flat": (prog.run("flat"), W.reshape(6))}


def test_weight_outputs_are_read_only(tmp_path):
    for how, prog in _loaded(tmp_path):
        for name, (out, want) in _weight_outputs(prog).items():
            assert not out.flags.writeable, f"{how} {name}: a writeable array over the program's weights"
            with pytest.raises(ValueError, match="read-only"):
                out[:] = 100
            with pytest.raises(ValueError):
                out.flags.writeable = True
            np.testing.assert_array_equal(out, want)
        # Nothing reached the weights: every later run reads what the file holds.
        for name, (out, want) in _weight_outputs(prog).items():
            np.testing.assert_array_equal(out, want, err_msg=f"{how} {name}")


def test_a_copy_is_writeable_and_computed_outputs_are_too(tmp_path):
    for how, prog in _loaded(tmp_path):
        mine = np.array(prog.run("weight"))  # the caller's own copy
        mine[:] = 100
        d = prog.run("doubled")
        assert d.flags.writeable, how
        d[:] = -1  # a run's result belongs to the caller
        np.testing.assert_array_equal(prog.run("weight"), W)
        np.testing.assert_array_equal(prog.run("doubled"), 2 * W)
