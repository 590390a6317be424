"""Shared helpers of the Python tests: skips for parts still being built, fallback
reference ops so replay can be tested before every reference op lands, random values,
hand-written programs, the command lines, and fixture checkpoints beside transformers."""
import operator
from pathlib import Path

import numpy as np
import pytest

from tensorvm import _C, reference
from tensorvm.pycompiler import registry

REPO = Path(__file__).resolve().parents[2]

HAS_VM = hasattr(_C, "Program") and hasattr(_C, "Session")
HAS_PARSE_AND_PRINT = hasattr(_C, "parse_and_print")
requires_vm = pytest.mark.skipif(not HAS_VM, reason="needs the VM bindings (_C.Program, _C.Session)")
requires_parse_and_print = pytest.mark.skipif(not HAS_PARSE_AND_PRINT, reason="needs _C.parse_and_print")


def missing_ops(*names):
    real = registry.real_ops()
    return [n for n in names if n not in real]


def requires_ops(*names):
    missing = missing_ops(*names)
    return pytest.mark.skipif(bool(missing), reason=f"ops not in the registry yet: {', '.join(missing)}")


def _binary(fn):
    def op(x, y):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            r = fn(np.asarray(x) if not isinstance(x, np.ndarray) else x, y)
            return np.asarray(r)
        return fn(x, y)
    return op


# Plain semantics for the scalar/elementwise ops the pycompiler tests use; only
# installed for names tensorvm.reference does not define yet.
FALLBACK_REFERENCE = {
    "add": _binary(operator.add),
    "sub": _binary(operator.sub),
    "mul": _binary(operator.mul),
    "div": _binary(operator.truediv),
    "lt": _binary(operator.lt),
    "le": _binary(operator.le),
    "gt": _binary(operator.gt),
    "ge": _binary(operator.ge),
    "eq": _binary(operator.eq),
    "ne": _binary(operator.ne),
    "logical_and": _binary(lambda a, b: np.logical_and(a, b) if isinstance(a, np.ndarray) else bool(a) and bool(b)),
    "neg": lambda x: -x,
    "silu": lambda x: (x / (1 + np.exp(-x))).astype(np.float32),
}


@pytest.fixture
def reference_fallbacks():
    added = [n for n in FALLBACK_REFERENCE if n not in reference.OPS]
    for n in added:
        reference.OPS[n] = FALLBACK_REFERENCE[n]
    try:
        yield added
    finally:
        for n in added:
            reference.OPS.pop(n, None)


def both_command_lines(program_dir, argv, capsys) -> str:
    """`tensorvm-run PROGRAM *argv` and `tensorvm run PROGRAM *argv`: both succeed and print the
    same bytes; returns the text."""
    import subprocess

    from tensorvm.pycompiler.cli import main

    res = subprocess.run([tensorvm_run_tool(), str(program_dir), *argv], capture_output=True, timeout=300)
    assert res.returncode == 0, res.stderr.decode()
    capsys.readouterr()
    assert main(["run", str(program_dir), *argv]) == 0
    assert capsys.readouterr().out.encode() == res.stdout
    return res.stdout.decode()


def tensorvm_run_tool() -> str:
    """The tensorvm-run binary of this package; skip without one (fail under CI)."""
    import os

    from tensorvm.pycompiler.locations import NotInstalledError, get_tensorvm_run

    try:
        return get_tensorvm_run()
    except NotInstalledError as e:
        if os.environ.get("CI"):
            pytest.fail(str(e))
        pytest.skip(str(e))


def run_cli(*args, ok=True):
    """tensorvm-run with `args` (a subprocess); asserts success unless ok=False."""
    import subprocess

    res = subprocess.run([tensorvm_run_tool(), *map(str, args)], capture_output=True, timeout=300)
    if ok:
        assert res.returncode == 0, res.stderr.decode()
    return res


def run_main(capsys, *argv):
    """The Python CLI (`tensorvm ...`) in this process: (exit code, stdout, stderr)."""
    from tensorvm.pycompiler.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def f32(rng, *shape, scale=1.0):
    """Standard normal f32 values of `shape`, times scale."""
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def write_program(path, text, weights=None, meta='{"format": "tensorvm-ir", "version": 1}'):
    """A program directory at `path` holding the IR `text` and `weights` (none by default)."""
    from tensorvm.pycompiler import weights_io

    path.mkdir()
    (path / "program.py").write_text(text)
    weights_io.write(path / "weights.safetensors", weights or {})
    (path / "meta.json").write_text(meta)
    return path


# A loop over a linear layer: more() and step() as while_loop's condition and body,
# for the tests of diff and profile (their own main functions follow these lines).
LOOP_FUNCTIONS = """# tensorvm ir 1
def more(i: int, n: int, x: Tensor) -> bool:
    lt_0 = lt(i, n)
    return lt_0

def step(i: int, n: int, x: Tensor) -> tuple[int, int, Tensor]:
    add_0 = add(i, 1)
    w = param("w")
    linear_0 = linear(x, w)
    tanh_0 = tanh(linear_0)
    return add_0, n, tanh_0
"""

_CHECKPOINTS = {}


def import_checkpoint(name, tmp_path_factory):
    """(program, transformers model) of the fixture checkpoint `name`
    (tests/fixtures/random_checkpoints.py), imported once per session; the model in eval
    mode with eager attention."""
    import sys

    import transformers

    import tensorvm

    fixtures = str(REPO / "tests" / "fixtures")
    if fixtures not in sys.path:
        sys.path.insert(0, fixtures)
    import random_checkpoints

    if name not in _CHECKPOINTS:
        path = random_checkpoints.ensure(name)
        out = tmp_path_factory.mktemp(name) / f"{name}.tvm"
        tensorvm.import_hf(path, out)
        model_class = getattr(transformers, random_checkpoints.CONFIGS[name][0])
        model = model_class.from_pretrained(path, attn_implementation="eager").eval()
        _CHECKPOINTS[name] = tensorvm.load(out), model
    return _CHECKPOINTS[name]


def torch_generate(model, generate=None, **inputs):
    """transformers' generate (`generate`, by default the model's own) without gradients,
    numpy arrays passed as torch tensors; its output as it returns it."""
    import torch

    inputs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
    with torch.no_grad():
        return (generate or type(model).generate)(model, **inputs)


def chi_square_pvalue(counts, probs) -> float:
    """The chi-square p-value of sampled token counts against the probabilities they should
    follow (both over the same ids): the categories expected fewer than 5 times are pooled
    into one, as the test needs. Sampling tests assert p > 1e-3 with fixed seeds (so they
    are deterministic, not flaky) and, to show the test has power, p < 1e-6 against a
    distribution that is close but wrong."""
    from scipy.stats import chisquare

    counts = np.asarray(counts, dtype=np.float64)
    want = np.asarray(probs, dtype=np.float64) * counts.sum()
    big = want >= 5
    return float(chisquare(np.append(counts[big], counts[~big].sum()), np.append(want[big], want[~big].sum())).pvalue)
