"""A BART-style decoder block, written once with the op front-end: test_block.py's
subject (a test fixture, not a model of the package).

The same `decoder_block` runs eagerly (C++ kernels or numpy reference, under
`tensorvm.mode`) and traces into a program. Post-LayerNorm, as in BART/Marian:

    x = LN(x + SelfAttn(x, causal))
    x = LN(x + CrossAttn(x, encoder_states, source padding mask))
    x = LN(x + fc2(silu(fc1(x))))

Weights carry Hugging Face Marian names with the layer index as `{}`, so one
traced block is called once per layer with the layer number as an int.
`build_toy_generator` adds a tiny greedy loop around it (while_loop with a stop
token and a step limit) to exercise control flow end to end.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensorvm import ops as T
from tensorvm.pycompiler.builder import ProgramBuilder
from tensorvm.pycompiler.control import while_loop
from tensorvm.pycompiler.types import Tensor

PREFIX = "model.decoder.layers.{}."


@dataclass(frozen=True)
class BlockConfig:
    d_model: int = 16
    heads: int = 4
    ffn_dim: int = 32
    eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads


def _proj(x, name: str, layer):
    return T.linear(x, T.param(PREFIX + name + ".weight", layer), T.param(PREFIX + name + ".bias", layer))


def _norm(x, name: str, layer, eps: float):
    return T.layer_norm(x, T.param(PREFIX + name + ".weight", layer), T.param(PREFIX + name + ".bias", layer), eps=eps)


def _split_heads(x, cfg: BlockConfig):
    # [B, T, d] -> [B, H, T, Dh]
    return T.transpose(T.reshape(x, [T.size(x, 0), T.size(x, 1), cfg.heads, cfg.head_dim]), 1, 2)


def _merge_heads(x, cfg: BlockConfig):
    # [B, H, T, Dh] -> [B, T, d]
    y = T.transpose(x, 1, 2)
    return T.reshape(y, [T.size(y, 0), T.size(y, 1), cfg.d_model])


def _attention(cfg: BlockConfig, x, kv, mask, name: str, layer):
    q = _split_heads(_proj(x, name + ".q_proj", layer), cfg)
    k = _split_heads(_proj(kv, name + ".k_proj", layer), cfg)
    v = _split_heads(_proj(kv, name + ".v_proj", layer), cfg)
    a = T.attention(q, k, v, mask, scale=cfg.head_dim ** -0.5)
    return _proj(_merge_heads(a, cfg), name + ".out_proj", layer)


def causal_mask(x):
    """[T, T] bool, True where key position <= query position."""
    n = T.size(x, 1)
    pos = T.arange(0, n)
    return T.le(T.reshape(pos, [1, n]), T.reshape(pos, [n, 1]))


def padding_mask(source_mask):
    """[B, S] with 1 for tokens and 0 for padding -> [B, 1, 1, S] bool (True attends)."""
    return T.reshape(T.ne(source_mask, 0), [T.size(source_mask, 0), 1, 1, T.size(source_mask, 1)])


def decoder_block(cfg: BlockConfig, x, encoder_states, source_mask, layer):
    """One decoder layer: x [B, T, d], encoder_states [B, S, d], source_mask [B, S] (i64 1/0)."""
    h = _attention(cfg, x, x, causal_mask(x), "self_attn", layer)
    x = _norm(T.add(x, h), "self_attn_layer_norm", layer, cfg.eps)
    h = _attention(cfg, x, encoder_states, padding_mask(source_mask), "encoder_attn", layer)
    x = _norm(T.add(x, h), "encoder_attn_layer_norm", layer, cfg.eps)
    h = _proj(T.silu(_proj(x, "fc1", layer)), "fc2", layer)
    return _norm(T.add(x, h), "final_layer_norm", layer, cfg.eps)


def random_weights(cfg: BlockConfig, layers: int = 1, seed: int = 0, vocab: int = 0) -> dict:
    """Seeded random f32 weights for `layers` blocks (and, with vocab > 0, the toy generator's tables)."""
    rng = np.random.default_rng(seed)
    d, f = cfg.d_model, cfg.ffn_dim
    w = {}

    def lin(name, out, inp, layer):
        w[PREFIX.format(layer) + name + ".weight"] = (rng.standard_normal((out, inp)) / np.sqrt(inp)).astype(np.float32)
        w[PREFIX.format(layer) + name + ".bias"] = (0.1 * rng.standard_normal(out)).astype(np.float32)

    for layer in range(layers):
        for attn in ("self_attn", "encoder_attn"):
            for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
                lin(f"{attn}.{p}", d, d, layer)
        lin("fc1", f, d, layer)
        lin("fc2", d, f, layer)
        for ln in ("self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm"):
            w[PREFIX.format(layer) + ln + ".weight"] = (1 + 0.1 * rng.standard_normal(d)).astype(np.float32)
            w[PREFIX.format(layer) + ln + ".bias"] = (0.1 * rng.standard_normal(d)).astype(np.float32)
    if vocab:
        w["model.decoder.embed_tokens.weight"] = rng.standard_normal((vocab, d)).astype(np.float32)
        w["model.decoder.embed_positions.weight"] = (0.5 * rng.standard_normal((64, d))).astype(np.float32)
        w["lm_head.weight"] = rng.standard_normal((vocab, d)).astype(np.float32)
    return w


def build_block(cfg: BlockConfig, weights: dict, layers: int = 1) -> ProgramBuilder:
    """A program with `block(x, encoder_states, source_mask, layer)` and `decoder(x, ...)` over all layers."""
    pb = ProgramBuilder(weights=weights, meta={"model": "decoder_block", "d_model": cfg.d_model, "heads": cfg.heads,
                                               "ffn_dim": cfg.ffn_dim, "layers": layers})
    _define_decoder(pb, cfg, layers)
    return pb


def _define_decoder(pb: ProgramBuilder, cfg: BlockConfig, layers: int):
    @pb.function
    def block(x: Tensor, encoder_states: Tensor, source_mask: Tensor, layer: int) -> Tensor:
        return decoder_block(cfg, x, encoder_states, source_mask, layer)

    @pb.function
    def decoder(x: Tensor, encoder_states: Tensor, source_mask: Tensor) -> Tensor:
        for layer in range(layers):
            x = block(x, encoder_states, source_mask, layer)
        return x

    return decoder


def build_toy_generator(cfg: BlockConfig, weights: dict, layers: int = 1, eos: int = 2, pad: int = 0) -> ProgramBuilder:
    """`generate(encoder_states, source_mask, start, max_steps) -> tokens`: greedy decoding with the block.

    Each step re-runs the block over the whole prefix (a toy: no KV cache), picks the
    argmax token, pads rows that already produced `eos`, and stops when every row has
    finished or after `max_steps` tokens.
    """
    pb = ProgramBuilder(weights=weights, meta={"model": "toy_generator", "eos": eos, "pad": pad, "layers": layers})
    decoder = _define_decoder(pb, cfg, layers)

    def embed(tokens):
        n = T.size(tokens, 1)
        x = T.embedding(tokens, T.param("model.decoder.embed_tokens.weight"))
        return T.add(x, T.slice(T.param("model.decoder.embed_positions.weight"), 0, 0, n))

    def keep_going(tokens, done, step, max_steps, encoder_states, source_mask):
        return T.logical_and(T.lt(step, max_steps), T.logical_not(T.all(done)))

    def step_fn(tokens, done, step, max_steps, encoder_states, source_mask):
        x = decoder(embed(tokens), encoder_states, source_mask)
        last = T.squeeze(T.slice(x, 1, T.sub(T.size(x, 1), 1), T.size(x, 1)), 1)
        nxt = T.argmax(T.linear(last, T.param("lm_head.weight")), dim=-1)
        nxt = T.where(done, pad, nxt)
        tokens = T.concat(tokens, T.unsqueeze(nxt, 1), dim=1)
        done = T.logical_or(done, T.eq(nxt, eos))
        return tokens, done, T.add(step, 1), max_steps, encoder_states, source_mask

    @pb.function
    def generate(encoder_states: Tensor, source_mask: Tensor, start: Tensor, max_steps: int) -> Tensor:
        done = T.eq(T.squeeze(start, 1), eos)
        tokens, _, _, _, _, _ = while_loop(keep_going, step_fn, start, done, 0, max_steps, encoder_states, source_mask)
        return tokens

    return pb
