"""import_hf for decoder-only checkpoints: the architecture table, what is refused
(nothing written), meta.json, quantized imports, and tensorvm-run's left padding."""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
import torch

import tensorvm
from decoder_only_helpers import checkpoint, hf_model, left_padded
from tensorvm.pycompiler.importers import ARCHITECTURES, UnsupportedConfig
from tensorvm.pycompiler.locations import get_tensorvm_run


def _edited(tmp_path, name, **changes):
    """A copy of fixture `name` with config.json entries replaced."""
    ckpt = tmp_path / name
    shutil.copytree(checkpoint(name), ckpt)
    config = json.loads((ckpt / "config.json").read_text())
    config.update(changes)
    (ckpt / "config.json").write_text(json.dumps(config))
    return ckpt


def test_architecture_table_lists_the_model_types():
    assert {"marian", "gpt2", "llama", "qwen2", "mistral", "gemma", "phi3", "qwen3", "gemma3_text",
            "smollm3"} <= set(ARCHITECTURES)


@pytest.mark.parametrize("name, changes, message", [
    ("llama-mha", {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}, "rope_type 'dynamic' is not supported"),
    ("llama-mha", {"num_key_value_heads": 4}, "not a multiple of num_key_value_heads 4"),
    ("llama-mha", {"hidden_act": "quick_gelu"}, "hidden_act 'quick_gelu' is not supported"),
    ("phi3-gqa3", {"rope_parameters": {"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": [1.0] * 3,
                                       "long_factor": [2.0] * 3}}, "rope_type 'longrope' is not supported"),
    ("phi3-gqa3", {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}},
     "partial rotary is not supported"),
    ("mistral-window5", {"sliding_window": 0}, "sliding_window 0 is not a positive int"),
    ("qwen3-gqa3", {"use_sliding_window": True, "sliding_window": 4,
                    "layer_types": ["full_attention", "sliding_attention"]}, "sliding-window attention layers"),
    ("smollm3-nope", {"no_rope_layers": [1, 0]}, "no_rope_layers has 2 entries for 3 layers"),
    ("gemma3-window4", {"use_bidirectional_attention": True}, "use_bidirectional_attention is not supported"),
    ("gemma3-window4", {"rope_parameters": {"full_attention": {"rope_type": "dynamic", "factor": 2.0,
                                                               "rope_theta": 1000000.0},
                                            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}},
     "rope_type 'dynamic' is not supported"),
    ("gpt2-odd", {"scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx"),
    ("gpt2-odd", {"model_type": "bert"}, "model_type 'bert' is not supported"),
])
def test_refused_configs_write_nothing(tmp_path, name, changes, message):
    ckpt = _edited(tmp_path, name, **changes)
    out = tmp_path / "out.tvm"
    with pytest.raises(UnsupportedConfig, match=message):
        tensorvm.import_hf(ckpt, out)
    assert not out.exists()


def test_meta_describes_a_decoder_only_program(tmp_path):
    tensorvm.import_hf(checkpoint("llama-gqa2"), tmp_path / "m.tvm")
    meta = tensorvm.load(tmp_path / "m.tvm").meta
    assert meta["model_type"] == "llama" and meta["is_encoder_decoder"] is False
    assert meta["eos_token_id"] == [2, 5] and meta["num_key_value_heads"] == 3
    assert "decoder_vocab_size" not in meta and "decoder_start_token_id" not in meta


@pytest.mark.parametrize("quantize", ["int8", "w8a8"])
# Phi-3: its split projections quantized; Gemma 3: its own model file
@pytest.mark.parametrize("name", ["qwen2-gqa4", "phi3-gqa3", "gemma3-window4"])
def test_quantized_import_runs_and_stays_close(tmp_path, quantize, name):
    ckpt = checkpoint(name)
    tensorvm.import_hf(ckpt, tmp_path / "f32.tvm")
    tensorvm.import_hf(ckpt, tmp_path / "q.tvm", quantize=quantize)
    f32, q = tensorvm.load(tmp_path / "f32.tvm"), tensorvm.load(tmp_path / "q.tvm")
    ids, mask = left_padded([[5, 9, 14, 7], [8, 30]], pad=0)
    ref, got = f32.run("forward", ids, mask), q.run("forward", ids, mask)
    real = mask == 1
    # int8 weights (and w8a8's int8 activations) move logits by a few percent of their spread
    assert np.abs(got[real] - ref[real]).max() < 0.15 * ref[real].std()
    out = q.generate(ids, mask, max_new_tokens=5)
    assert out.shape == (2, 9) and (out >= 0).all() and (out < f32.meta["vocab_size"]).all()


def test_tensorvm_run_pads_prompts_on_the_left(tmp_path):
    tensorvm.import_hf(checkpoint("gpt2-odd"), tmp_path / "g.tvm")
    prog = tensorvm.load(tmp_path / "g.tvm")
    res = subprocess.run([get_tensorvm_run(), str(tmp_path / "g.tvm"), "generate", "--ids", "5 6 7 8; 9 10",
                          "--arg", "max_new_tokens=4", "--outputs", str(tmp_path / "out.npz"), "--time"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "ms per generated token" in res.stdout
    ids, mask = left_padded([[5, 6, 7, 8], [9, 10]], pad=prog.meta["pad_token_id"])
    want = prog.generate(ids, mask, max_new_tokens=4)
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["arr_0"], want)


def test_tensorvm_run_repetition_penalty_skips_left_padding(tmp_path):
    """The C++ front end: tensorvm-run pads with pad_token_id (gpt2-odd's is its end
    token) and the program's processor leaves that padding unpenalized, as transformers'
    prompt_ignore_length does: the same tokens and per-step scores."""
    tensorvm.import_hf(checkpoint("gpt2-odd"), tmp_path / "g.tvm")
    prog = tensorvm.load(tmp_path / "g.tvm")
    res = subprocess.run([get_tensorvm_run(), str(tmp_path / "g.tvm"), "generate", "--ids", "5 6 7 8 11 12; 9 10",
                          "--arg", "max_new_tokens=6", "--arg", "num_beams=1", "--arg", "repetition_penalty=0.6",
                          "--arg", "output_scores=True", "--outputs", str(tmp_path / "out.npz")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    ids, mask = left_padded([[5, 6, 7, 8, 11, 12], [9, 10]], pad=prog.meta["pad_token_id"])
    with torch.no_grad():
        want = hf_model("gpt2-odd").generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                                             max_new_tokens=6, num_beams=1, do_sample=False, repetition_penalty=0.6,
                                             output_scores=True, return_dict_in_generate=True)
    got = np.load(tmp_path / "out.npz")
    np.testing.assert_array_equal(got["arr_0"], want.sequences.numpy())
    np.testing.assert_allclose(got["arr_2"], torch.stack(want.scores).numpy(), atol=1e-4, rtol=0)
