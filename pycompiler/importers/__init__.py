"""The architecture table: config.json's model_type -> how to import it, as
llama.cpp's llm_arch table maps an architecture to its tensors and graph builder.

Each entry is an Architecture (common.py): the transformers class that loads the
checkpoint, the config -> spec function (refusing what the model file does not
compute with UnsupportedConfig), the state dict -> weights function, the linear weights
quantize= may quantize, the meta.json entries and the model file's builder.

Adding an architecture is an importer module and a model file, registered from
anywhere with register_architecture (tensorvm.register_architecture; import-hf loads
the modules that do it with --plugin or TENSORVM_PLUGINS, pycompiler/plugins.py), or,
for a built-in one, a module here, a model file in models/ and a line in
ARCHITECTURES (docs/extending.md).
"""
from __future__ import annotations

from . import bart, gemma3, gpt2, gpt_neox, llama, m2m100, opt, phi, t5, whisper
from .common import Architecture, UnsupportedConfig

ARCHITECTURES = {
    "marian": bart.MARIAN,
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
    "gpt_neox": gpt_neox.ARCH,
    "opt": opt.ARCH,
    "phi": phi.ARCH,
}
BUILT_IN = frozenset(ARCHITECTURES)


def register_architecture(model_type: str, arch: Architecture, *, replace: bool = False) -> None:
    """Makes import_hf read checkpoints whose config.json says `model_type` with `arch`.
    A model_type already in the table (built in, or registered before) is refused unless
    `replace`: a plugin does not silently change how another model is imported."""
    if not isinstance(model_type, str) or not model_type:
        raise TypeError(f"register_architecture: model_type must be a non-empty str, not {model_type!r}")
    if not isinstance(arch, Architecture):
        raise TypeError(f"register_architecture('{model_type}'): expected an Architecture, not {type(arch).__name__}")
    if model_type in ARCHITECTURES and not replace:
        what = "a built-in architecture" if model_type in BUILT_IN else "registered already"
        raise ValueError(f"register_architecture: model_type '{model_type}' is {what} "
                         f"({ARCHITECTURES[model_type].model_class}); pass replace=True to replace it")
    ARCHITECTURES[model_type] = arch


def architecture(model_type: str):
    """The Architecture of `model_type`, or UnsupportedConfig naming the supported ones."""
    if model_type not in ARCHITECTURES:
        raise UnsupportedConfig(f"import_hf: model_type '{model_type}' is not supported "
                                f"(supported: {', '.join(sorted(ARCHITECTURES))}; add one with tensorvm.register_architecture, "
                                "loaded by import-hf --plugin: docs/extending.md)")
    return ARCHITECTURES[model_type]


__all__ = ["ARCHITECTURES", "BUILT_IN", "Architecture", "architecture", "register_architecture",
           "UnsupportedConfig"]
