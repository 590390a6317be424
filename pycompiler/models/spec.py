"""The fields every model file's spec has, whatever the network: its width, vocabulary,
activation, special tokens and generate's defaults. A family's spec adds its own
(models/decoder_only.py: DecoderOnlySpec, encoder_decoder.py: EncoderDecoderSpec, t5.py)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ModelSpec:
    d_model: int
    vocab_size: int
    activation: str  # transformers' name (layers.py: ACTIVATIONS)
    eos_token_id: int | tuple  # several: a row ends on any (generation_config's list)
    pad_token_id: int
    generation: dict  # generate's defaults by transformers' names (the checkpoint's generation_config)
    # Set on the spec after it is made, not fields: the output matrix's stored name (the
    # importer resolves ties to one stored tensor) and import_hf's quantization: None (f32) or
    # the import's schemes.Plan (a scheme name also works: every matrix quantized).
    lm_head = "lm_head.weight"
    quantize = None
