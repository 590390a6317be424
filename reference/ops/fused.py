"""Reference fused ops: what the graph passes in pycompiler/passes/fuse.py put in place of
two ops. Each is, by definition, the two ops one after the other; an error of either is
reported under the fused op's name."""
import math

import numpy as np

from ._common import OpError, desc, is_tensor, op
from .elementwise import add, gelu, masked_fill, relu, sigmoid, silu
from .linalg import linear
from .nn import layer_norm, rms_norm
from .reduction import log_softmax


def _compose(name, fn):
    try:
        return fn()
    except OpError as e:
        raise OpError(f"{name}: {e}") from None


@op
def add_layer_norm(x, residual, weight=None, bias=None, eps=1e-5):
    return _compose("add_layer_norm", lambda: layer_norm(add(x, residual), weight, bias, eps))


@op
def add_rms_norm(x, residual, weight=None, eps=1e-6):
    return _compose("add_rms_norm", lambda: rms_norm(add(x, residual), weight, eps))


@op
def log_softmax_masked(x, banned):
    if is_tensor(x) and x.ndim >= 1 and (not is_tensor(banned) or banned.dtype != np.bool_
                                            or banned.shape != (x.shape[-1],)):
        raise OpError(f"log_softmax_masked: banned must be bool [{x.shape[-1]}] (x's last dimension), "
                      f"got {desc(banned)}")
    return _compose("log_softmax_masked", lambda: masked_fill(log_softmax(x, -1), banned, -math.inf))


_ACTIVATIONS = {"relu": relu, "sigmoid": sigmoid, "silu": silu, "gelu": gelu}


@op
def linear_act(x, weight, bias, activation):
    if activation not in _ACTIVATIONS:
        raise OpError(f'linear_act: activation must be "relu", "sigmoid", "silu" or "gelu", got "{activation}"')
    return _compose("linear_act", lambda: _ACTIVATIONS[activation](linear(x, weight, bias)))
