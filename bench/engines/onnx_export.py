"""Export a MarianMTModel to three ONNX graphs with ``torch.onnx.export``.

optimum-onnx cannot be used beside transformers 5.x (see bench/README.md), so
this is a small hand-written equivalent of optimum's "encoder + decoder with
past" export, using the model's own modules (Linear, LayerNorm, embeddings):

* ``encoder.onnx``:  input_ids [B,S] int64, attention_mask [B,S] int64
                      -> last_hidden_state [B,S,D]   (HF's MarianEncoder itself)
* ``cross_kv.onnx``: encoder_hidden_states [B,S,D]
                      -> cross_k.{l}, cross_v.{l} [B,H,S,Dh] for every layer
                      (the cross-attention K/V projections, run once per call)
* ``decoder.onnx``:  input_ids [N,1], encoder_attention_mask [N,S] int64,
                      past_k.{l}, past_v.{l} [N,H,T,Dh] (T may be 0),
                      cross_k.{l}, cross_v.{l} [N,H,S,Dh]
                      -> logits [N,V] (lm_head + final_logits_bias),
                         present_k.{l}, present_v.{l} [N,H,T+1,Dh]

The decoder step is written out (attention as matmul/softmax/matmul, as
transformers' eager attention) and checked against transformers before export.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

EXPORT_VERSION = 1


def _modules():
    import torch
    from torch import nn

    class EncoderWrapper(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.encoder = model.get_encoder()

        def forward(self, input_ids, attention_mask):
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    class CrossKV(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.layers = model.model.decoder.layers
            cfg = model.config
            self.H = cfg.decoder_attention_heads
            self.Dh = cfg.d_model // self.H

        def forward(self, enc):
            B, S, _ = enc.shape
            outs = []
            for layer in self.layers:
                a = layer.encoder_attn
                outs.append(a.k_proj(enc).view(B, S, self.H, self.Dh).transpose(1, 2))
                outs.append(a.v_proj(enc).view(B, S, self.H, self.Dh).transpose(1, 2))
            return tuple(outs)

    class DecoderStep(nn.Module):
        def __init__(self, model):
            super().__init__()
            dec = model.model.decoder
            cfg = model.config
            self.embed_tokens = dec.embed_tokens
            self.embed_scale = float(dec.embed_scale)
            self.register_buffer("positions", dec.embed_positions.weight.detach().clone(), persistent=False)
            self.layers = dec.layers
            self.lm_head = model.lm_head
            self.register_buffer("final_logits_bias", model.final_logits_bias.detach().clone(), persistent=False)
            self.H = cfg.decoder_attention_heads
            self.Dh = cfg.d_model // self.H
            self.scaling = self.Dh**-0.5
            self.L = len(self.layers)
            self.act = dec.layers[0].activation_fn

        def _heads(self, x):
            N, T, _ = x.shape
            return x.view(N, T, self.H, self.Dh).transpose(1, 2)

        def _attend(self, q, k, v, bias=None):
            w = torch.matmul(q, k.transpose(2, 3)) * self.scaling
            if bias is not None:
                w = w + bias
            w = torch.softmax(w, dim=-1)
            o = torch.matmul(w, v).transpose(1, 2)
            return o.reshape(o.shape[0], o.shape[1], self.H * self.Dh)

        def forward(self, input_ids, encoder_attention_mask, *kv):
            L = self.L
            past_k, past_v = kv[0:L], kv[L : 2 * L]
            cross_k, cross_v = kv[2 * L : 3 * L], kv[3 * L : 4 * L]
            T = past_k[0].shape[2]
            x = self.embed_tokens(input_ids) * self.embed_scale
            x = x + self.positions[T : T + 1].unsqueeze(0)
            m = encoder_attention_mask.to(x.dtype)[:, None, None, :]
            bias = (1.0 - m) * torch.finfo(x.dtype).min
            new_k, new_v = [], []
            for i, layer in enumerate(self.layers):
                sa = layer.self_attn
                q = self._heads(sa.q_proj(x))
                k = torch.cat([past_k[i], self._heads(sa.k_proj(x))], dim=2)
                v = torch.cat([past_v[i], self._heads(sa.v_proj(x))], dim=2)
                new_k.append(k)
                new_v.append(v)
                x = layer.self_attn_layer_norm(x + sa.out_proj(self._attend(q, k, v)))
                ca = layer.encoder_attn
                q = self._heads(ca.q_proj(x))
                x = layer.encoder_attn_layer_norm(x + ca.out_proj(self._attend(q, cross_k[i], cross_v[i], bias)))
                h = layer.fc2(self.act(layer.fc1(x)))
                x = layer.final_layer_norm(x + h)
            logits = self.lm_head(x)[:, 0, :] + self.final_logits_bias
            return (logits, *new_k, *new_v)

    return EncoderWrapper, CrossKV, DecoderStep


def _check_decoder_step(model, step, cross, torch) -> float:
    """Run the decoder step against transformers on a random batch; return max |diff| of logits."""
    g = torch.Generator().manual_seed(0)
    cfg = model.config
    V = cfg.vocab_size
    B, S, n = 2, 5, 3
    src = torch.randint(2, cfg.pad_token_id, (B, S), generator=g)
    mask = torch.ones(B, S, dtype=torch.long)
    mask[1, -2:] = 0
    dec_ids = torch.cat(
        [torch.full((B, 1), cfg.decoder_start_token_id), torch.randint(2, cfg.pad_token_id, (B, n - 1), generator=g)],
        dim=1,
    )
    with torch.no_grad():
        ref = model(input_ids=src, attention_mask=mask, decoder_input_ids=dec_ids).logits
        enc = model.get_encoder()(input_ids=src, attention_mask=mask).last_hidden_state
        ckv = cross(enc)
        L = len(model.model.decoder.layers)
        H = cfg.decoder_attention_heads
        Dh = cfg.d_model // H
        pk = [torch.zeros(B, H, 0, Dh) for _ in range(L)]
        pv = [torch.zeros(B, H, 0, Dh) for _ in range(L)]
        worst = 0.0
        for t in range(n):
            out = step(dec_ids[:, t : t + 1], mask, *pk, *pv, *ckv[0::2], *ckv[1::2])
            logits, pk, pv = out[0], list(out[1 : 1 + L]), list(out[1 + L :])
            worst = max(worst, float((logits - ref[:, t, :V]).abs().max()))
    return worst


def export(checkpoint_dir: str | Path, out_dir: str | Path, opset: int | None = None, only=None) -> dict:
    """Export the three graphs into ``out_dir``; returns timings and checks."""
    import torch
    from transformers import MarianMTModel

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    model = MarianMTModel.from_pretrained(str(checkpoint_dir), attn_implementation="eager").eval()
    EncoderWrapper, CrossKV, DecoderStep = _modules()
    enc_m, cross_m, step_m = EncoderWrapper(model).eval(), CrossKV(model).eval(), DecoderStep(model).eval()
    cfg = model.config
    L = cfg.decoder_layers
    H = cfg.decoder_attention_heads
    Dh = cfg.d_model // H
    diff = _check_decoder_step(model, step_m, cross_m, torch)
    if diff > 1e-3:
        raise RuntimeError(f"decoder-step wrapper differs from transformers by {diff}")

    B, S, T = 2, 7, 3
    Bd, Sd, Td = torch.export.Dim("batch"), torch.export.Dim("src_len"), torch.export.Dim("past_len")
    Nd = torch.export.Dim("rows")
    ids = torch.randint(2, cfg.pad_token_id, (B, S))
    mask = torch.ones(B, S, dtype=torch.long)
    enc = torch.randn(B, S, cfg.d_model)
    want = set(only or ("encoder", "cross_kv", "decoder"))
    past = [torch.randn(B, H, T, Dh) for _ in range(2 * L)]
    cross = [torch.randn(B, H, S, Dh) for _ in range(2 * L)]
    graphs = {
        "encoder": dict(
            model=enc_m,
            args=(ids, mask),
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_shapes=({0: Bd, 1: Sd}, {0: Bd, 1: Sd}),
        ),
        "cross_kv": dict(
            model=cross_m,
            args=(enc,),
            input_names=["encoder_hidden_states"],
            output_names=[f"cross_{kv}.{i}" for i in range(L) for kv in ("k", "v")],
            dynamic_shapes=({0: Bd, 1: Sd},),
        ),
        "decoder": dict(
            model=step_m,
            args=(ids[:, :1], mask, *past, *cross),
            input_names=["input_ids", "encoder_attention_mask"]
            + [f"past_k.{i}" for i in range(L)]
            + [f"past_v.{i}" for i in range(L)]
            + [f"cross_k.{i}" for i in range(L)]
            + [f"cross_v.{i}" for i in range(L)],
            output_names=["logits"] + [f"present_k.{i}" for i in range(L)] + [f"present_v.{i}" for i in range(L)],
            # the signature is (input_ids, encoder_attention_mask, *kv): kv's shapes form one tuple
            dynamic_shapes=(
                {0: Nd},
                {0: Nd, 1: Sd},
                tuple([{0: Nd, 2: Td} for _ in range(2 * L)] + [{0: Nd, 2: Sd} for _ in range(2 * L)]),
            ),
        ),
    }
    with torch.no_grad():
        for name, g in graphs.items():
            if name in want:
                torch.onnx.export(
                    g.pop("model"), g.pop("args"), str(out_dir / f"{name}.onnx"),
                    dynamo=True, external_data=False, opset_version=opset, verbose=False, **g,
                )
    info = {
        "export_version": EXPORT_VERSION,
        "torch": torch.__version__,
        "export_s": round(time.perf_counter() - t0, 2),
        "decoder_step_vs_transformers_max_abs_logit_diff": diff,
        "layers": L,
        "heads": H,
        "head_dim": Dh,
    }
    (out_dir / "export_info.json").write_text(json.dumps(info, indent=2) + "\n")
    return info
