"""numpy reference of the KV cache object and its ops (same semantics as core/kvcache.cpp)."""
import numpy as np

from .ops import OPS, OpError, op


class KVCache:
    type_name = "KVCache"

    def __init__(self, layers, batch, heads, head_dim, max_len):
        if layers < 1 or batch < 0 or heads < 1 or head_dim < 1 or max_len < 0:
            raise OpError("kv_cache: invalid cache dimensions")
        shape = (batch, heads, max_len, head_dim)
        self.k = [np.zeros(shape, np.float32) for _ in range(layers)]
        self.v = [np.zeros(shape, np.float32) for _ in range(layers)]
        self.len = [0] * layers
        self.cross_k = [None] * layers
        self.cross_v = [None] * layers
        self.dims = (layers, batch, heads, head_dim, max_len)

    def _layer(self, name, layer):
        if not 0 <= layer < self.dims[0]:
            raise OpError(f"{name}: layer {layer} out of range: the cache has {self.dims[0]} layers")


def _cache(name, c):
    if not isinstance(c, KVCache):
        raise OpError(f"{name}: argument 'cache' must be a KVCache")
    return c


@op
def kv_cache(layers, batch, heads, head_dim, max_len):
    return KVCache(layers, batch, heads, head_dim, max_len)


@op
def kv_append(cache, layer, k, v):
    c = _cache("kv_append", cache)
    c._layer("kv_append", layer)
    _, b, h, d, max_len = c.dims
    for t in (k, v):
        if t.dtype != np.float32 or t.ndim != 4 or t.shape[0] != b or t.shape[1] != h or t.shape[3] != d:
            raise OpError(f"kv_append: k and v must be f32[{b}, {h}, t, {d}]")
    if k.shape != v.shape:
        raise OpError("kv_append: k and v must have the same shape")
    at, n = c.len[layer], k.shape[2]
    if at + n > max_len:
        raise OpError(f"kv_append: the cache is full: layer {layer} holds {at} of {max_len} positions")
    c.k[layer][:, :, at:at + n] = k
    c.v[layer][:, :, at:at + n] = v
    c.len[layer] = at + n
    return c.k[layer][:, :, :at + n], c.v[layer][:, :, :at + n]


@op
def kv_reorder(cache, index):
    c = _cache("kv_reorder", cache)
    b = c.dims[1]
    if index.ndim != 1 or index.shape[0] != b or index.dtype.kind != "i":
        raise OpError(f"kv_reorder: index must be an int tensor [{b}]")
    if ((index < 0) | (index >= b)).any():
        raise OpError(f"kv_reorder: index out of range [0, {b})")
    c.k = [k[index] for k in c.k]
    c.v = [v[index] for v in c.v]
    return c


@op
def kv_truncate(cache, length):
    c = _cache("kv_truncate", cache)
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)):
        raise OpError("kv_truncate: argument 'length' must be an int")
    if length < 0:
        raise OpError(f"kv_truncate: length {length} is negative")
    for layer, n in enumerate(c.len):
        if length > n:
            raise OpError(f"kv_truncate: length {length} is beyond the filled length: layer {layer} holds {n} positions")
    # Fresh arrays, so views returned by earlier kv_append calls keep what they showed.
    c.k = [k.copy() for k in c.k]
    c.v = [v.copy() for v in c.v]
    c.len = [int(length)] * c.dims[0]
    return c


@op
def kv_set_cross(cache, layer, k, v):
    c = _cache("kv_set_cross", cache)
    c._layer("kv_set_cross", layer)
    if k.dtype != np.float32 or k.ndim != 4 or k.shape != v.shape or v.dtype != np.float32:
        raise OpError("kv_set_cross: cross k and v must be f32 [batch, heads, source_len, head_dim] of one shape")
    c.cross_k[layer], c.cross_v[layer] = k, v
    return c


@op
def kv_cross(cache, layer):
    c = _cache("kv_cross", cache)
    c._layer("kv_cross", layer)
    if c.cross_k[layer] is None:
        raise OpError(f"kv_cross: no cross-attention K/V set for layer {layer}")
    return c.cross_k[layer], c.cross_v[layer]


@op
def kv_length(cache, layer=0):
    c = _cache("kv_length", cache)
    c._layer("kv_length", layer)
    return c.len[layer]


@op
def kv_reset(cache):
    c = _cache("kv_reset", cache)
    c.len = [0] * c.dims[0]
    c.cross_k = [None] * c.dims[0]
    c.cross_v = [None] * c.dims[0]
    return c


@op
def if_none(x, default):
    return default if x is None else x


__all__ = ["KVCache"] + [n for n in OPS if n.startswith("kv_")] + ["if_none"]
