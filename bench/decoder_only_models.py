"""The decoder-only checkpoints of bench/decoder_only_bench.py: real model shapes,
seeded random weights, built locally with transformers (there is no model hub here)
and cached.

    ensure(name, cache_root) -> Path    # built once into <cache_root>/<name>-v<VERSION>

The weights come from tests/fixtures/random_checkpoints.py's `_randomize` (matrices
N(0, 2.5^2 / fan_in), embeddings N(0, 1)), so the logits are well spread and greedy
continuations vary: an agreement check between engines then means something (with
transformers' default init, greedy search repeats one token and every engine agrees
trivially). The `-tiny` names are the smoke test's: same architectures, toy sizes.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURE = REPO_ROOT / "tests" / "fixtures" / "random_checkpoints.py"
VERSION = 1

# name -> (model class, config class, config kwargs, generation_config kwargs)
MODELS = {
    # GPT2Config's defaults are GPT-2 small (124M): 12 layers, 768 wide, 12 heads, vocab 50257, 1024 positions
    "gpt2-124m": ("GPT2LMHeadModel", "GPT2Config", {}, dict(bos_token_id=50256, eos_token_id=50256)),
    # Qwen2.5-0.5B's config.json, with the KV cache capped at 4096 positions (the real one says 32768)
    "qwen2.5-0.5b": ("Qwen2ForCausalLM", "Qwen2Config",
                     dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                          num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=4096,
                          rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
                          hidden_act="silu", bos_token_id=151643, eos_token_id=151643),
                     dict(bos_token_id=151643, eos_token_id=151643, pad_token_id=151643)),
    # Qwen3-0.6B's config.json, KV cache capped at 4096 positions (the real one says 40960):
    # head_dim 128 (16 heads: 2048 wide, hidden 1024), q/k norms, tied
    "qwen3-0.6b": ("Qwen3ForCausalLM", "Qwen3Config",
                   dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                        num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=4096,
                        rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True, hidden_act="silu",
                        bos_token_id=151643, eos_token_id=151645),
                   dict(bos_token_id=151643, eos_token_id=[151645, 151643], pad_token_id=151643)),
    # gemma-3-1b-pt's config.json, KV cache capped at 4096 positions (the real one says 32768):
    # 5 sliding-window layers (512, rope base 10000) to 1 global (rope base 1e6), head_dim 256
    "gemma-3-1b": ("Gemma3ForCausalLM", "Gemma3TextConfig",
                   dict(vocab_size=262144, hidden_size=1152, intermediate_size=6912, num_hidden_layers=26,
                        num_attention_heads=4, num_key_value_heads=1, head_dim=256, query_pre_attn_scalar=256,
                        sliding_window=512, sliding_window_pattern=6, rope_theta=1000000.0,
                        rope_local_base_freq=10000.0, max_position_embeddings=4096, rms_norm_eps=1e-6,
                        hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
                        bos_token_id=2, eos_token_id=1, pad_token_id=0),
                   dict(bos_token_id=2, eos_token_id=[1, 106], pad_token_id=0)),
    # TinyLlama-1.1B's config.json (TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T): Llama, GQA 32/4, untied
    "tinyllama-1.1b": ("LlamaForCausalLM", "LlamaConfig",
                       dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                            num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048,
                            rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False, hidden_act="silu",
                            bos_token_id=1, eos_token_id=2),
                       dict(bos_token_id=1, eos_token_id=2, pad_token_id=0)),
    "gpt2-tiny": ("GPT2LMHeadModel", "GPT2Config",
                  dict(vocab_size=211, n_embd=48, n_layer=2, n_head=4, n_positions=160,
                       bos_token_id=210, eos_token_id=210),
                  dict(bos_token_id=210, eos_token_id=210)),
    "qwen2-tiny": ("Qwen2ForCausalLM", "Qwen2Config",
                   dict(vocab_size=233, hidden_size=56, intermediate_size=96, num_hidden_layers=2,
                        num_attention_heads=7, num_key_value_heads=1, max_position_embeddings=160,
                        rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
                        bos_token_id=232, eos_token_id=232),
                   dict(bos_token_id=232, eos_token_id=232, pad_token_id=232)),
}


def _gemma3_post_norms(model) -> None:
    """Gemma 3's norms after the attention and the MLP at (1 + weight) = 8: with the
    parity fixtures' (1 + N(0, 0.1)) every sublayer adds a unit-RMS vector to the
    residual, the tied input embedding dominates it, and greedy search repeats one token."""
    import torch

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("post_attention_layernorm.weight", "post_feedforward_layernorm.weight")):
                p.add_(7.0)


# name -> the change to the randomized weights before they are saved
ADJUST = {"gemma-3-1b": _gemma3_post_norms}


def _randomize():
    spec = importlib.util.spec_from_file_location("tensorvm_random_checkpoints", FIXTURE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod._randomize


def build(name: str, out: Path, seed: int = 0, models: dict = MODELS, adjust=None) -> Path:
    """`adjust(model)`, if given, changes the randomized weights before they are saved."""
    import torch
    import transformers

    model_class, config_class, config_kw, gen_kw = models[name]
    torch.manual_seed(seed)
    config = getattr(transformers, config_class)(**config_kw)
    model = getattr(transformers, model_class)(config)
    _randomize()(model, seed)
    if adjust is not None:
        adjust(model)
    model.generation_config = transformers.GenerationConfig(**gen_kw)
    model.save_pretrained(out)
    (out / "bench_checkpoint.json").write_text(json.dumps({"name": name, "version": VERSION, "seed": seed}) + "\n")
    return out


def ensure(name: str, cache_root: Path, models: dict = MODELS, version: int = VERSION, adjust=None) -> Path:
    """The checkpoint directory of `name` (a key of `models`), built (atomically) on first use;
    adjust None: ADJUST's entry for a model of MODELS, if any."""
    if adjust is None and models is MODELS:
        adjust = ADJUST.get(name)
    if name not in models:
        raise KeyError(f"unknown benchmark model {name!r} (known: {', '.join(models)})")
    cache_root = Path(cache_root)
    path = cache_root / f"{name}-v{version}"
    if (path / "bench_checkpoint.json").is_file():
        return path
    cache_root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=cache_root, prefix=f".{name}-"))
    try:
        build(name, tmp, models=models, adjust=adjust)
        os.replace(tmp, path)
    except OSError:
        if not (path / "bench_checkpoint.json").is_file():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def _tensor_bytes(checkpoint_dir: Path) -> dict[str, int]:
    out = {}
    for f in sorted(Path(checkpoint_dir).glob("*.safetensors")):
        with open(f, "rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            header = json.loads(fh.read(n))
        for k, v in header.items():
            if k != "__metadata__":
                a, b = v["data_offsets"]
                out[k] = b - a
    return out


def weight_bytes(checkpoint_dir: Path) -> int:
    """Bytes of float32 weights in the checkpoint's safetensors files (tied matrices once)."""
    return sum(_tensor_bytes(checkpoint_dir).values())


def bytes_per_step(checkpoint_dir: Path) -> int:
    """float32 bytes a batch-1 decode step reads: every weight, except that the position
    table (GPT-2's wpe) and an untied input embedding are read one row at a time (a tied
    embedding is read whole, as the output projection). Also right for a directory of
    other safetensors with the checkpoint's names (a tensorvm program's weights, where a
    quantized matrix is NAME.int8 + NAME.scale and the like)."""
    sizes = _tensor_bytes(checkpoint_dir)
    skip = [k for k in sizes if ".wpe.weight" in f".{k}"]
    if any(k.startswith("lm_head.weight") for k in sizes):
        skip += [k for k in sizes if ".wte.weight" in f".{k}" or ".embed_tokens.weight" in f".{k}"]
    return sum(v for k, v in sizes.items() if k not in skip)
