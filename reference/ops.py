"""numpy reference ops. Plain, obvious code: these define what the kernels must compute."""
import numpy as np

OPS = {}


def op(fn):
    """Registers a reference op under its function name."""
    OPS[fn.__name__] = fn
    return fn


class OpError(RuntimeError):
    """Raised by a reference op on bad input (the C++ kernel raises VMError)."""


def _f32(x):
    return np.asarray(x, dtype=np.float32)


@op
def linear(x, weight, bias=None):
    if x.dtype != np.float32 or weight.dtype != np.float32:
        raise OpError("linear: x and weight must be f32")
    if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[1]:
        raise OpError(f"linear: x {x.shape} does not match weight {weight.shape}")
    y = np.matmul(x, weight.T, dtype=np.float32) if x.shape[-1] else np.zeros(x.shape[:-1] + (weight.shape[0],), np.float32)
    if bias is not None:
        y = y + bias
    return _f32(y)
