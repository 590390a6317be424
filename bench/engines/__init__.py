"""Benchmark engines: one module per engine, all with the interface of base.Engine.

``make_engine(name)`` imports only the module that engine needs, so a worker
process for CTranslate2 or ONNX Runtime never imports torch.
"""

from __future__ import annotations

from .base import Engine, EngineUnavailable, MarianIds  # noqa: F401

# name -> (module, class, constructor kwargs)
ENGINES: dict[str, tuple[str, str, dict]] = {
    "tensorvm": ("tensorvm_engine", "TensorVMEngine", {}),
    "tensorvm-int8": ("tensorvm_engine", "TensorVMEngine", {"quantize": "int8"}),
    "tensorvm-w8a8": ("tensorvm_engine", "TensorVMEngine", {"quantize": "w8a8"}),
    # issue 29's 4-bit schemes: "unavailable" until the build's importer has them
    "tensorvm-int4": ("tensorvm_engine", "TensorVMEngine", {"quantize": "int4"}),
    "tensorvm-w4a8": ("tensorvm_engine", "TensorVMEngine", {"quantize": "w4a8"}),
    "transformers": ("transformers_engine", "TransformersEngine", {}),
    "ctranslate2-float32": ("ctranslate2_engine", "CTranslate2Engine", {"quantization": "float32"}),
    "ctranslate2-int8": ("ctranslate2_engine", "CTranslate2Engine", {"quantization": "int8"}),
    "onnxruntime": ("onnxruntime_engine", "OnnxRuntimeEngine", {}),
    "executorch-float32": ("executorch_engine", "ExecuTorchEngine", {}),
    "executorch-8da8w": ("executorch_engine", "ExecuTorchEngine", {"quant": "8da8w"}),
}

REFERENCE = "transformers"  # parity reference (tokens)
DEFAULT_ENGINES = ["tensorvm", "tensorvm-int8", "tensorvm-w8a8", "tensorvm-int4", "tensorvm-w4a8", "transformers", "ctranslate2-float32", "ctranslate2-int8",
                   "onnxruntime", "executorch-float32", "executorch-8da8w"]
# --quick (the CI smoke run) leaves out the engines that install a venv of their own: opt in with --engines
QUICK_DEFAULT_ENGINES = [e for e in DEFAULT_ENGINES if not e.startswith("executorch")]


def make_engine(name: str) -> Engine:
    import importlib

    if name not in ENGINES:
        raise KeyError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
    mod, cls, kwargs = ENGINES[name]
    return getattr(importlib.import_module(f"{__name__}.{mod}"), cls)(**kwargs)
