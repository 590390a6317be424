"""The architecture table: config.json's model_type -> how to import it, as
llama.cpp's llm_arch table maps an architecture to its tensors and graph builder.

Each entry is a module with:

    MODEL_CLASS                 transformers class that loads the checkpoint
    spec_from_config(config, gen) -> spec   (the model file's spec dataclass; it
                                is refused with UnsupportedConfig if the config
                                asks for something the model file does not compute)
    weights(spec, state) -> {name: array}   the names the model file reads
    linear_weights(spec, w) -> [name]       what quantize= turns into int8
    meta(spec) -> dict                      meta.json entries of this architecture
    build(spec, weights, meta) -> ProgramBuilder   the model file's builder

Adding an architecture is one module here, one model file in models/, and one
line in ARCHITECTURES (docs/extending.md).
"""
from __future__ import annotations

from . import gpt2, marian
from .common import UnsupportedConfig

ARCHITECTURES = {
    "marian": marian,
    "gpt2": gpt2,
}


def architecture(model_type: str):
    """The importer module for `model_type`, or UnsupportedConfig naming the supported ones."""
    if model_type not in ARCHITECTURES:
        raise UnsupportedConfig(f"import_hf: model_type '{model_type}' is not supported "
                                f"(supported: {', '.join(sorted(ARCHITECTURES))})")
    return ARCHITECTURES[model_type]


__all__ = ["ARCHITECTURES", "architecture", "UnsupportedConfig"]
