"""The architecture table: config.json's model_type -> how to import it, as
llama.cpp's llm_arch table maps an architecture to its tensors and graph builder.

Each entry is an Architecture (common.py): the transformers class that loads the
checkpoint, the config -> spec function (refusing what the model file does not
compute with UnsupportedConfig), the state dict -> weights function, the weights
quantize= turns into int8, the meta.json entries and the model file's builder.

Adding an architecture is one module here, one model file in models/, and one
line in ARCHITECTURES (docs/extending.md).
"""
from __future__ import annotations

from . import bart, gemma3, gpt2, llama, m2m100, marian, t5, whisper
from .common import Architecture, UnsupportedConfig

ARCHITECTURES = {
    "marian": marian.ARCH,
    "m2m_100": m2m100.ARCH,
    "bart": bart.BART,
    "mbart": bart.MBART,
    "pegasus": bart.PEGASUS,
    "gpt2": gpt2.ARCH,
    "llama": llama.LLAMA,
    "qwen2": llama.QWEN2,
    "mistral": llama.MISTRAL,
    "gemma": llama.GEMMA,
    "phi3": llama.PHI3,
    "qwen3": llama.QWEN3,
    "smollm3": llama.SMOLLM3,
    "gemma3_text": gemma3.GEMMA3,
    "whisper": whisper.ARCH,
    "t5": t5.ARCH,
    "mt5": t5.MT5,
}


def architecture(model_type: str):
    """The Architecture of `model_type`, or UnsupportedConfig naming the supported ones."""
    if model_type not in ARCHITECTURES:
        raise UnsupportedConfig(f"import_hf: model_type '{model_type}' is not supported "
                                f"(supported: {', '.join(sorted(ARCHITECTURES))})")
    return ARCHITECTURES[model_type]


__all__ = ["ARCHITECTURES", "Architecture", "architecture", "UnsupportedConfig"]
