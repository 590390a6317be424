"""Export a MarianMTModel to ExecuTorch programs (.pte) lowered to XNNPACK.

Runs in the ExecuTorch virtual environment (executorch_venv.py), never in the
harness's Python. Three programs of one method each (encode.pte, cross_kv.pte,
decode.pte), batch 1:

* ``encode``:    input_ids [1,S] int64 -> last_hidden_state [1,S,D]
                 (HF's MarianEncoder itself; no mask: batch 1 has no padding)
* ``cross_kv``:  last_hidden_state [1,S,D] -> cross_k [L,1,H,Dh,S], cross_v [L,1,H,S,Dh]
                 (every layer's cross-attention K/V projections, once per call; K comes
                 transposed, so the decode step multiplies by it without a transpose)
* ``decode``:    input_ids [1,1] int64, pos [1] int64, self_k, self_v [L,1,H,T,Dh],
                 cross_k [L,1,H,Dh,S], cross_v [L,1,H,S,Dh]
                 -> logits [1,V], self_k, self_v with row ``pos`` written
                 (a static self-attention cache of a fixed T = max_len, passed in and
                 out; positions after ``pos`` are masked)

S is dynamic (2 .. max_src); XNNPACK runs every linear, matmul and softmax it
takes, the rest runs on ExecuTorch's portable kernels. ``quant="8da8w"``
quantizes every linear (the tied output projection included) with XNNPACK's
PT2E quantizer: dynamic per-token int8 activations x per-channel symmetric
int8 weights; the embeddings stay float32 (as optimum-executorch's ``8da8w``).

The decode wrapper reuses onnx_export's decoder step (the model's own modules,
attention written out); it is checked against transformers before lowering, and
the lowered program against the eager wrapper after.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

EXPORT_VERSION = 2
MAX_SRC = 512
MAX_LEN = 64
METHODS = ("encode", "cross_kv", "decode")  # decoder positions in the static cache: 1 start token + up to 63 new tokens


def _modules():
    import torch
    from torch import nn

    from .onnx_export import _modules as onnx_modules

    _, _, DecoderStep = onnx_modules()

    class Encode(nn.Module):
        """No mask (batch 1 has no padding): transformers' mask construction does not
        survive the PT2E quantizer's graph (an index op on int indices)."""

        def __init__(self, model):
            super().__init__()
            self.encoder = model.get_encoder()

        def forward(self, input_ids):
            return self.encoder(input_ids=input_ids).last_hidden_state

    class CrossKV(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.layers = model.model.decoder.layers
            self.H = model.config.decoder_attention_heads
            self.Dh = model.config.d_model // self.H

        def forward(self, enc):
            B, S, _ = enc.shape
            ks, vs = [], []
            for layer in self.layers:
                a = layer.encoder_attn
                ks.append(a.k_proj(enc).view(B, S, self.H, self.Dh).permute(0, 2, 3, 1))  # K transposed
                vs.append(a.v_proj(enc).view(B, S, self.H, self.Dh).transpose(1, 2))
            return torch.stack(ks), torch.stack(vs)

    class StaticDecode(DecoderStep):
        """One decoder step on a static cache: row ``pos`` of self_k / self_v is written
        (torch.where against a one-hot row, so the cache comes back as an output) and
        attention sees rows 0..pos only."""

        def __init__(self, model, max_len):
            super().__init__(model)
            self.max_len = max_len

        def _attend_t(self, q, kt, v, bias=None):
            # k arrives transposed ([.., Dh, S]): no transpose of a dynamic-shaped input in the graph
            w = torch.matmul(q, kt) * self.scaling
            if bias is not None:
                w = w + bias
            o = torch.matmul(torch.softmax(w, dim=-1), v).transpose(1, 2)
            return o.reshape(o.shape[0], o.shape[1], self.H * self.Dh)

        def forward(self, input_ids, pos, self_k, self_v, cross_k, cross_v):
            T = self.max_len
            x = self.embed_tokens(input_ids) * self.embed_scale
            x = x + torch.index_select(self.positions, 0, pos).unsqueeze(0)
            slots = torch.arange(T, dtype=pos.dtype)
            bias = torch.where(slots <= pos, 0.0, torch.finfo(x.dtype).min).view(1, 1, 1, T)
            new_k, new_v = [], []
            for i, layer in enumerate(self.layers):
                sa = layer.self_attn
                q = self._heads(sa.q_proj(x))
                k = self_k[i].index_copy(2, pos, self._heads(sa.k_proj(x)))
                v = self_v[i].index_copy(2, pos, self._heads(sa.v_proj(x)))
                new_k.append(k)
                new_v.append(v)
                x = layer.self_attn_layer_norm(x + sa.out_proj(self._attend(q, k, v, bias)))
                ca = layer.encoder_attn
                q = self._heads(ca.q_proj(x))
                x = layer.encoder_attn_layer_norm(x + ca.out_proj(self._attend_t(q, cross_k[i], cross_v[i])))
                h = layer.fc2(self.act(layer.fc1(x)))
                x = layer.final_layer_norm(x + h)
            logits = self.lm_head(x)[:, 0, :] + self.final_logits_bias
            return logits, torch.stack(new_k), torch.stack(new_v)

    return Encode, CrossKV, StaticDecode


def _greedy_logits(mods, src, steps, L, H, Dh, T, start, torch):
    """Logits of ``steps`` greedy steps of the wrapped (or lowered) pieces; ``mods`` are callables."""
    enc, cross, dec = mods
    ck, cv = cross(enc(src))
    sk = torch.zeros(L, 1, H, T, Dh)
    sv = torch.zeros(L, 1, H, T, Dh)
    tok = torch.tensor([[start]])
    out = []
    for t in range(steps):
        logits, sk, sv = dec(tok, torch.tensor([t]), sk, sv, ck, cv)
        out.append(logits)
        tok = logits.argmax(-1, keepdim=True)
    return torch.cat(out), tok


def export(checkpoint_dir: str | Path, out_dir: str | Path, quant: str | None = None) -> dict:
    """Write ``encode/cross_kv/decode.pte`` (and export_info.json) into ``out_dir``; returns timings and checks."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    from transformers import MarianMTModel

    if quant not in (None, "8da8w"):
        raise ValueError(f"executorch_export.export: unknown quant {quant!r} (None or '8da8w')")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    model = MarianMTModel.from_pretrained(str(checkpoint_dir), attn_implementation="eager").eval()
    cfg = model.config
    L, H = cfg.decoder_layers, cfg.decoder_attention_heads
    Dh = cfg.d_model // H
    T = min(MAX_LEN, cfg.max_position_embeddings)
    max_src = min(MAX_SRC, cfg.max_position_embeddings)
    Encode, CrossKV, StaticDecode = _modules()
    enc_m, cross_m, dec_m = Encode(model).eval(), CrossKV(model).eval(), StaticDecode(model, T).eval()

    g = torch.Generator().manual_seed(0)
    S = 7
    src = torch.randint(2, cfg.pad_token_id, (1, S), generator=g)
    src[0, -1] = cfg.eos_token_id
    steps = min(6, T)
    with torch.no_grad():
        # the wrapper against transformers (teacher-forced on its own greedy tokens)
        wl, _ = _greedy_logits((enc_m, cross_m, dec_m), src, steps, L, H, Dh, T, cfg.decoder_start_token_id, torch)
        dec_ids = torch.cat([torch.tensor([[cfg.decoder_start_token_id]]), wl.argmax(-1)[None, :-1]], dim=1)
        ref = model(input_ids=src, decoder_input_ids=dec_ids).logits[0, :, : wl.shape[-1]]
    wrap_diff = float((wl - ref).abs().max())
    if wrap_diff > 1e-3:
        raise RuntimeError(f"executorch_export: decode wrapper differs from transformers by {wrap_diff}")

    Sd = torch.export.Dim("src_len", min=2, max=max_src)
    enc_out = enc_m(src)
    ck, cv = cross_m(enc_out)
    # two distinct tensors: torch.export treats one tensor passed twice as aliased inputs
    self_k, self_v = torch.zeros(L, 1, H, T, Dh), torch.zeros(L, 1, H, T, Dh)
    specs = {
        "encode": (enc_m, (src,), ({1: Sd},)),
        "cross_kv": (cross_m, (enc_out,), ({1: Sd},)),
        "decode": (
            dec_m,
            (torch.tensor([[cfg.decoder_start_token_id]]), torch.tensor([0]), self_k, self_v, ck, cv),
            (None, None, None, None, {4: Sd}, {3: Sd}),
        ),
    }
    delegation = {}
    with torch.no_grad():
        for name, (m, args, dyn) in specs.items():
            ep = torch.export.export(m, args, dynamic_shapes=dyn, strict=False)
            if quant == "8da8w":
                ep = _quantize(ep, args, dyn, torch)
            # one program per method: each is loaded, checked and timed on its own
            edge = to_edge_transform_and_lower({name: ep}, partitioner=[XnnpackPartitioner()])
            delegation[name] = _delegation(edge.exported_program(name).graph_module)
            prog = edge.to_executorch()
            tmp = out_dir / f"{name}.pte.tmp"
            tmp.write_bytes(prog.buffer)
            tmp.replace(out_dir / f"{name}.pte")  # never a half-written program

    lowered_diff = _check_lowered(out_dir, (enc_m, cross_m, dec_m), src, steps, (L, H, Dh, T), cfg, torch)
    if quant is None and lowered_diff > 1e-3:
        raise RuntimeError(f"executorch_export: lowered program differs from the eager wrapper by {lowered_diff}")
    info = {
        "export_version": EXPORT_VERSION,
        "quant": quant or "none",
        "torch": torch.__version__,
        "export_s": round(time.perf_counter() - t0, 2),
        "wrapper_vs_transformers_max_abs_logit_diff": wrap_diff,
        "lowered_vs_wrapper_max_abs_logit_diff": lowered_diff,
        "layers": L,
        "heads": H,
        "head_dim": Dh,
        "max_len": T,
        "max_src": max_src,
        "delegation": delegation,
        "pte_bytes": {n: (out_dir / f"{n}.pte").stat().st_size for n in METHODS},
    }
    (out_dir / "export_info.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def _delegation(graph_module) -> dict:
    """How many XNNPACK subgraphs the program has, and the operators left to the portable
    kernels (counted here: executorch.devtools' own counter imports pandas)."""
    import operator
    from collections import Counter

    calls = [n for n in graph_module.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    delegate = [n for n in calls if "call_delegate" in str(n.target)]
    portable = Counter(str(getattr(n.target, "__name__", n.target)) for n in calls if n not in delegate)
    return {"xnnpack_subgraphs": len(delegate), "portable_ops": dict(sorted(portable.items()))}


def _quantize(ep, args, dyn, torch):
    """XNNPACK's PT2E quantizer, dynamic int8 activations x per-channel int8 weights."""
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    q = XNNPACKQuantizer()
    # linears only (8da8w): a global config also annotates the int64 index inputs
    q.set_module_type(torch.nn.Linear, get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True))
    m = prepare_pt2e(ep.module(), q)
    m(*args)  # dynamic activations: no calibration data needed, one run sets up the observers
    m = convert_pt2e(m)
    return torch.export.export(m, args, dynamic_shapes=dyn, strict=False)


def _check_lowered(out_dir, wrappers, src, steps, dims, cfg, torch) -> float:
    """Max |logit difference| of the lowered program against the eager wrappers."""
    from executorch.runtime import Runtime

    m = {n: Runtime.get().load_program(str(out_dir / f"{n}.pte")).load_method(n) for n in METHODS}

    def call(name):
        # outputs live in the method's planned memory, which its next call overwrites: copy them
        return lambda *a: tuple(x.clone() for x in m[name].execute(list(a))) if name != "encode" else m[name].execute(list(a))[0].clone()

    L, H, Dh, T = dims
    start = cfg.decoder_start_token_id
    with torch.no_grad():
        ref, _ = _greedy_logits(wrappers, src, steps, L, H, Dh, T, start, torch)
    got, _ = _greedy_logits((call("encode"), call("cross_kv"), call("decode")), src, steps, L, H, Dh, T, start, torch)
    return float((got - ref).abs().max())
