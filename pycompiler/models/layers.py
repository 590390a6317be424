"""Pieces every model file composes its network from: linear layers (f32 or
quantized at import), splitting and merging attention heads, and the position ids
and attention masks of a left-padded batch in a decoder-only model."""
from __future__ import annotations

from .. import ops as T
from ..schemes import embed_op, linear_op

# transformers' activation names (config.activation_function / hidden_act) -> our op
ACTIVATIONS = {"swish": "silu", "silu": "silu", "gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh",
               "gelu_pytorch_tanh": "gelu_tanh", "tanh": "tanh"}


def activation(name: str, x):
    """transformers' activation `name` (a key of ACTIVATIONS) applied to x."""
    kind = ACTIVATIONS[name]
    if kind == "silu":
        return T.silu(x)
    if kind == "gelu":
        return T.gelu(x)
    if kind == "gelu_tanh":
        return T.gelu(x, approximate="tanh")
    if kind == "relu":
        return T.relu(x)
    return T.tanh(x)


def linear(quantize, x, prefix: str, layer=None, bias: bool = True):
    """x @ W^T + b for the weight `prefix.weight` (and `prefix.bias`); `quantize` (None,
    the import's schemes.Plan, or a scheme name) picks how the weight is stored and the
    op that runs it (pycompiler/schemes.py)."""
    b = T.param(prefix + ".bias", layer) if bias else None
    return linear_op(quantize, x, prefix + ".weight", layer, (b,))


def output_projection(quantize, x, name: str, bias: str | None = None):
    """Logits from the last hidden states with the (possibly tied) output matrix `name`
    (and the bias vector `bias`, Phi's), stored as a table: the layout the token
    embedding reads too, so a tied matrix is stored once."""
    return linear_op(quantize, x, name, None, () if bias is None else (T.param(bias),), table=True)


def embed(quantize, tokens, name: str):
    """Rows of the token-embedding table `name`, stored as `quantize`'s tables (position
    tables stay f32 and use T.embedding)."""
    return embed_op(quantize, tokens, name)


def split_heads(x, rows, length, heads: int, head_dim: int):
    """[rows, length, heads * head_dim] -> [rows, heads, length, head_dim]."""
    return T.transpose(T.reshape(x, [rows, length, heads, head_dim]), 1, 2)


def merge_heads(x, rows, length, width: int):
    """[rows, heads, length, head_dim] -> [rows, length, width]."""
    return T.reshape(T.transpose(x, 1, 2), [rows, length, width])


def position_ids(mask, start, end):
    """Position ids [rows, end - start] of cache slots [start, end), as transformers
    derives them from a 2-D attention mask (generate's _prepare_position_ids_for_
    generation): a row's tokens count 0, 1, ... from its first unmasked slot, padded
    slots get 0. `mask` [rows, >= end] is 1 for a token, 0 for padding."""
    m = T.slice(mask, 1, 0, end)
    pos = T.masked_fill(T.sub(T.cumsum(m, 1), 1), T.eq(m, 0), 0)
    return T.slice(pos, 1, start, end)


def key_mask(attention_mask):
    """[batch, keys] 0/1 -> bool [batch, 1, 1, keys] (True = attend): padding as the
    attention op's mask."""
    return T.reshape(T.cast(attention_mask, "bool"), [T.size(attention_mask, 0), 1, 1, T.size(attention_mask, 1)])


def causal(n):
    """bool [n, n]: position i attends positions j <= i."""
    pos = T.arange(0, n)
    return T.le(T.reshape(pos, [1, n]), T.reshape(pos, [n, 1]))


def causal_after(start, end):
    """bool [end - start, end]: new position start + i attends every slot j <= start + i
    (the cached ones and the new ones up to itself); causal(n) when start is 0."""
    q = T.reshape(T.arange(start, end), [T.sub(end, start), 1])
    return T.le(T.reshape(T.arange(0, end), [1, end]), q)


def causal_mask(mask, start, end, window=None):
    """bool [rows, 1, end - start, end]: query slot i in [start, end) attends key slot
    j <= i where the row has a token (True attends). With a sliding `window`, only
    keys j > i - window, as transformers' sliding_window_overlay (in cache slots,
    padding included)."""
    rows = T.size(mask, 0)
    keys = T.reshape(T.ne(T.slice(mask, 1, 0, end), 0), [rows, 1, 1, end])
    q = T.reshape(T.arange(start, end), [T.sub(end, start), 1])
    j = T.reshape(T.arange(0, end), [1, end])
    seen = T.le(j, q)
    if window is not None:
        seen = T.logical_and(seen, T.gt(j, T.sub(q, window)))
    return T.logical_and(keys, seen)


def step_mask(mask, position, window=None):
    """bool [rows, 1, 1, position + 1]: the keys one new token at `position` attends
    (with a sliding `window`, only slots > position - window)."""
    end = T.add(position, 1)
    keys = T.ne(T.slice(mask, 1, 0, end), 0)
    if window is not None:
        keys = T.logical_and(keys, T.reshape(T.gt(T.arange(0, end), T.sub(position, window)), [1, end]))
    return T.reshape(keys, [T.size(mask, 0), 1, 1, end])


# Attention blocks of the BART family (Marian, M2M100, Whisper) and T5: projections
# named prefix.{q,k,v,out}_proj (T5: prefix.{q,k,v,o}, no biases, no 1/sqrt(head_dim)
# scaling), `width` = heads * head_dim (T5's inner dim, which need not be d_model).

BART_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "out_proj")  # query, key, value, output


def _attention_scale(head_dim: int, scale):
    return head_dim ** -0.5 if scale is None else scale


def self_attention(q8, x, mask, width: int, heads: int, prefix: str, layer, cache=None, k_bias: bool = True, *,
                   proj=BART_PROJECTIONS, bias: bool = True, scale=None):
    """Multi-head self-attention over x [rows, n, d] -> [rows, n, d]; with a
    cache, x's K/V are appended to the layer's and the queries see all cached ones.
    scale None is 1/sqrt(head_dim)."""
    hd = width // heads
    rows, n = T.size(x, 0), T.size(x, 1)
    q = split_heads(linear(q8, x, f"{prefix}.{proj[0]}", layer, bias), rows, n, heads, hd)
    k = split_heads(linear(q8, x, f"{prefix}.{proj[1]}", layer, bias and k_bias), rows, n, heads, hd)
    v = split_heads(linear(q8, x, f"{prefix}.{proj[2]}", layer, bias), rows, n, heads, hd)
    if cache is not None:
        k, v = T.kv_append(cache, layer, k, v)
    a = merge_heads(T.attention(q, k, v, mask, scale=_attention_scale(hd, scale)), rows, n, width)
    return linear(q8, a, f"{prefix}.{proj[3]}", layer, bias)


def cross_kv(q8, cache, states, width: int, heads: int, prefix: str, layer, k_bias: bool = True, *,
             proj=BART_PROJECTIONS, bias: bool = True):
    """Stores the cross-attention K/V of encoder states [batch, source_len, d] in
    the cache, once per sentence; returns the cache."""
    hd = width // heads
    batch, length = T.size(states, 0), T.size(states, 1)
    k = split_heads(linear(q8, states, f"{prefix}.{proj[1]}", layer, bias and k_bias), batch, length, heads, hd)
    v = split_heads(linear(q8, states, f"{prefix}.{proj[2]}", layer, bias), batch, length, heads, hd)
    return T.kv_set_cross(cache, layer, k, v)


def cross_attention(q8, x, cache, source_mask, width: int, heads: int, prefix: str, layer, length, *,
                    proj=BART_PROJECTIONS, bias: bool = True, scale=None):
    """Attention of decoder rows x [rows, length, d] over their sentence's cached
    encoder K/V. The beams of a sentence (and their positions) become its query
    positions, [sentence, heads, beams * length, head_dim], so no K/V is copied per beam."""
    hd = width // heads
    rows = T.size(x, 0)
    ck, cv = T.kv_cross(cache, layer)
    batch = T.size(ck, 0)
    beams = T.floordiv(rows, batch)
    queries = beams if length == 1 else T.mul(beams, length)
    q = T.transpose(T.reshape(linear(q8, x, f"{prefix}.{proj[0]}", layer, bias), [batch, queries, heads, hd]), 1, 2)
    a = T.attention(q, ck, cv, source_mask, scale=_attention_scale(hd, scale))
    return linear(q8, T.reshape(T.transpose(a, 1, 2), [rows, length, width]), f"{prefix}.{proj[3]}", layer, bias)


def position_rows(table: str, start, end):
    """Rows [start, end) of a learned position table; past its end is an error naming
    the position (a slice would quietly come back short)."""
    return T.index_select(T.param(table), 0, T.arange(start, end))


def layer_norm(x, name: str, layer=None, eps: float = 1e-5):
    """LayerNorm with the weights `name.weight` and `name.bias`."""
    return T.layer_norm(x, T.param(name + ".weight", layer), T.param(name + ".bias", layer), eps=eps)


# The post-LayerNorm layers of the BART family (Marian, BART): LN(x + f(x)) for every
# sublayer, weights named as transformers names them under `prefix`.

def post_norm_encoder_layer(q8, act: str, x, mask, width: int, heads: int, prefix: str, layer):
    x = layer_norm(T.add(x, self_attention(q8, x, mask, width, heads, prefix + "self_attn", layer)),
                   prefix + "self_attn_layer_norm", layer)
    return _post_norm_feed_forward(q8, act, x, prefix, layer)


def post_norm_decoder_layer(q8, act: str, x, cache, source_mask, self_mask, width: int, heads: int, prefix: str, layer,
                            length):
    """Self-attention over the cache (self_mask None for one new position), then
    cross-attention over the sentence's encoder K/V, then the feed-forward."""
    a = self_attention(q8, x, self_mask, width, heads, prefix + "self_attn", layer, cache)
    x = layer_norm(T.add(x, a), prefix + "self_attn_layer_norm", layer)
    a = cross_attention(q8, x, cache, source_mask, width, heads, prefix + "encoder_attn", layer, length)
    x = layer_norm(T.add(x, a), prefix + "encoder_attn_layer_norm", layer)
    return _post_norm_feed_forward(q8, act, x, prefix, layer)


def _post_norm_feed_forward(q8, act: str, x, prefix: str, layer):
    h = linear(q8, activation(act, linear(q8, x, prefix + "fc1", layer)), prefix + "fc2", layer)
    return layer_norm(T.add(x, h), prefix + "final_layer_norm", layer)


# The pre-LayerNorm layers of the BART family (M2M100, MBart, Pegasus, Whisper): x + f(LN(x)) for
# every sublayer, weights named as transformers names them under `prefix`.

def pre_norm_feed_forward(q8, act: str, x, prefix: str, layer):
    """x + fc2(act(fc1(LN(x)))) with prefix.final_layer_norm."""
    h = layer_norm(x, prefix + "final_layer_norm", layer)
    return T.add(x, linear(q8, activation(act, linear(q8, h, prefix + "fc1", layer)), prefix + "fc2", layer))


def pre_norm_encoder_layer(q8, act: str, x, mask, width: int, heads: int, prefix: str, layer, k_bias: bool = True):
    h = layer_norm(x, prefix + "self_attn_layer_norm", layer)
    x = T.add(x, self_attention(q8, h, mask, width, heads, prefix + "self_attn", layer, k_bias=k_bias))
    return pre_norm_feed_forward(q8, act, x, prefix, layer)


def pre_norm_decoder_layer(q8, act: str, x, cache, source_mask, self_mask, width: int, heads: int, prefix: str, layer,
                           length, k_bias: bool = True):
    """Self-attention over the cache (self_mask None for one new position), then
    cross-attention over the sentence's encoder K/V, then the feed-forward."""
    h = layer_norm(x, prefix + "self_attn_layer_norm", layer)
    x = T.add(x, self_attention(q8, h, self_mask, width, heads, prefix + "self_attn", layer, cache, k_bias=k_bias))
    h = layer_norm(x, prefix + "encoder_attn_layer_norm", layer)
    x = T.add(x, cross_attention(q8, h, cache, source_mask, width, heads, prefix + "encoder_attn", layer, length))
    return pre_norm_feed_forward(q8, act, x, prefix, layer)


def partial_rotary(x, positions, inv_freq, rotary_dim: int, head_dim: int, scale: float = 1.0):
    """Rotary embedding of the first rotary_dim features of every head of x [rows, heads,
    n, head_dim], the others passed through (GPT-NeoX's rotary_pct, Phi's
    partial_rotary_factor); inv_freq [rotary_dim / 2]."""
    if rotary_dim == head_dim:
        return T.rotary(x, positions, inv_freq, scale)
    rotated = T.rotary(T.slice(x, 3, 0, rotary_dim), positions, inv_freq, scale)
    return T.concat(rotated, T.slice(x, 3, rotary_dim, head_dim), dim=3)
