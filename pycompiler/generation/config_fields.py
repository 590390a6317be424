"""Every field of transformers' GenerationConfig, and what a program does with it.

    FIELDS[name] -> Field(how, reason, off, fixed)
    refusal(name, value) -> why `value` cannot be honoured, or None

One table, read by the importer (a checkpoint's generation_config value that
cannot be honoured is refused at import, with the reason) and by
`Program.generate` (the same field passed as a keyword is refused the same way).
tests/python/test_generation_config_fields.py enumerates `GenerationConfig()`'s
fields and fails on one that is not here, so a new transformers release cannot
slip a field past.

- HONOURED: the program computes what transformers does with it. A generate input
  (search.py, processors.py: every such input is listed here by the registry, its
  checkpoint value the program's default), or, `fixed`, a value baked in at import
  (a call may pass the program's own value, no other).
- REFUSED: not implemented. A value in `off` leaves the feature off in transformers
  and is accepted; any other is refused with `reason`.
- NOT_APPLICABLE: changes how transformers computes, never what: any value is
  accepted and changes nothing here (`reason` says why).
"""
from __future__ import annotations

from dataclasses import dataclass

from .processors import import_fields
from .search import generate_inputs

HONOURED, REFUSED, NOT_APPLICABLE = "honoured", "refused", "not applicable"


@dataclass(frozen=True)
class Field:
    how: str
    reason: str
    off: tuple = (None,)  # REFUSED: the values that leave the feature off
    fixed: bool = False  # HONOURED at import only


def _refused(reason: str, *off) -> Field:
    return Field(REFUSED, reason, (None, *off))


def _not_applicable(reason: str) -> Field:
    return Field(NOT_APPLICABLE, reason)


_ASSISTED = "tunes assisted generation with an assistant model, which the program does not run (assistant_model " \
            "and assistant_early_exit are refused)"
_GROUP_BEAMS = "group beam search (diverse beams) is not implemented (transformers 5 moved it to the Hub)"
_CONSTRAINED = "constrained beam search is not implemented (transformers 5 moved it to the Hub)"
# transformers' cache classes that compute what a plain KV cache computes; "quantized"
# changes the scores and "paged" switches generate to continuous batching
_SAME_CACHES = ("dynamic", "static", "offloaded", "offloaded_static", "sliding_window", "hybrid", "hybrid_chunked",
                "offloaded_hybrid", "offloaded_hybrid_chunked")

# The fields that are no generate input of the program.
_OTHERS = {
    # lengths and stopping
    "max_time": _refused("a wall-clock limit would make the tokens depend on the machine's speed; use max_new_tokens"),
    "stop_strings": _refused("stop strings are not implemented (they need the tokenizer's string matching inside "
                             "the loop); pass their token ids as eos_token_id"),
    # strategy
    "use_mtp": _refused("multi-token prediction (assisted decoding with the model's MTP heads) is not implemented",
                        False),
    "penalty_alpha": _refused("contrastive search is not implemented (transformers 5 moved it to the Hub)", 0, 0.0),
    "dola_layers": _refused("DoLa decoding is not implemented (transformers 5 moved it to the Hub)"),
    "num_beam_groups": _refused(_GROUP_BEAMS, 1), "diversity_penalty": _refused(_GROUP_BEAMS, 0, 0.0),
    "constraints": _refused(_CONSTRAINED), "force_words_ids": _refused(_CONSTRAINED),
    "low_memory": _refused("sequential beam search is not implemented (transformers 5 refuses it too)", False),
    # the cache
    "use_cache": _not_applicable("the program always decodes with its KV cache, which transformers' result does "
                                 "not depend on"),
    "cache_implementation": _refused("only caches that compute what a plain KV cache computes are accepted "
                                     f"({', '.join(_SAME_CACHES)}): a quantized cache changes the scores, a paged one "
                                     "switches transformers to continuous batching", *_SAME_CACHES),
    "cache_config": _not_applicable("configures transformers' cache object; the program has its own f32 cache"),
    "max_cache_len": _not_applicable("pre-sizes transformers' static cache; the program sizes its cache per call"),
    "prefill_chunk_size": _not_applicable("splits transformers' prefill into chunks; the program prefills the prompt "
                                          "in one pass, to the same result"),
    # logits processors and warpers
    "top_h": _refused("top-H (entropy budget) sampling is not implemented"),
    "eta_cutoff": _refused("eta sampling is not implemented", 0, 0.0),
    "encoder_repetition_penalty": _refused("encoder_repetition_penalty is not implemented", 1, 1.0),
    "encoder_no_repeat_ngram_size": _refused("encoder_no_repeat_ngram_size is not implemented", 0),
    "remove_invalid_values": _refused("remove_invalid_values (InfNanRemoveLogitsProcessor) is not implemented", False),
    "exponential_decay_length_penalty": _refused("exponential_decay_length_penalty is not implemented"),
    "token_healing": _refused("token healing is not implemented (it re-tokenizes the prompt's tail with the "
                              "tokenizer)", False),
    "guidance_scale": _refused("classifier-free guidance is not implemented", 1, 1.0),
    "watermarking_config": _refused("watermarking is not implemented"),
    # outputs
    "output_attentions": _refused("the program does not return attentions", False),
    "output_hidden_states": _refused("the program does not return hidden states", False),
    "return_dict_in_generate": Field(HONOURED, "by Program.generate (a C++ caller always gets the output tuple)"),
    # special tokens
    "pad_token_id": Field(HONOURED, "fills the rows and beams that ended; fixed at import", fixed=True),
    "decoder_start_token_id": Field(HONOURED, "an encoder-decoder's first decoder token; fixed at import (several, "
                                    "one per row, are refused)", fixed=True),
    "bos_token_id": _not_applicable("generate needs input_ids, and transformers reads bos_token_id only to start "
                                    "from none (the importer takes it as the decoder start token of a checkpoint "
                                    "that names none, as transformers does)"),
    # assisted generation
    "assistant_early_exit": _refused("early-exit assisted generation is not implemented"),
    "speculation_type": _refused("speculative decoding is not implemented"),
    **{f: _not_applicable(_ASSISTED) for f in (
        "is_assistant", "assistant_confidence_threshold",
        "assistant_lookbehind", "target_lookbehind", "assistant_ensemble_weight")},
    # performance and metadata
    "compile_config": _not_applicable("torch.compile settings; the program is compiled at import"),
    "disable_compile": _not_applicable("torch.compile settings; the program is compiled at import"),
    "continuous_batching_config": _not_applicable("configures transformers' generate_batch, not generate"),
    "_from_model_config": _not_applicable("metadata"),
    "transformers_version": _not_applicable("metadata"),
}


def _table() -> dict:
    registered = {i.name: Field(HONOURED, "a generate input; the checkpoint's value is its default")
                  for i in generate_inputs()}
    registered.update({f: Field(HONOURED, "read by a processor at import", fixed=True) for f in import_fields()})
    stale = sorted(set(registered) & set(_OTHERS))
    if stale:  # a processor registered for a field this table still refuses
        raise AssertionError(f"config_fields: {stale} are registered by the generation library and still listed in "
                             "_OTHERS")
    return {**registered, **_OTHERS}


FIELDS = _table()

_CALLBACKS = "a Python callback cannot run inside the program"
# transformers generate's keyword arguments that are no GenerationConfig field (None,
# or the listed values, change nothing and are accepted by Program.generate)
CALL_ARGUMENTS = {
    "generation_config": _refused("pass the options as keywords"),
    "logits_processor": _refused(f"custom logits processors: {_CALLBACKS}", []),
    "stopping_criteria": _refused(f"custom stopping criteria: {_CALLBACKS}", []),
    "prefix_allowed_tokens_fn": _refused(f"{_CALLBACKS}; bad_words_ids, suppress_tokens and sequence_bias run inside "
                                         "it"),
    "assistant_model": _refused("assisted generation is not implemented"),
    "assistant_tokenizer": _refused("assisted generation is not implemented"),
    "negative_prompt_ids": _refused("classifier-free guidance is not implemented"),
    "negative_prompt_attention_mask": _refused("classifier-free guidance is not implemented"),
    "custom_generate": _refused("a decoding method from the Hub cannot run inside the program"),
    "trust_remote_code": _refused("a decoding method from the Hub cannot run inside the program", False),
    "synced_gpus": _refused("the program runs on one device", False),
    "tokenizer": _refused("transformers uses it only for stop_strings and token_healing, which are not implemented"),
    "inputs": _refused("pass the prompt as input_ids (or input_features), or positionally"),
    "inputs_embeds": _refused("generate takes token ids, not embeddings"),
    "decoder_attention_mask": _refused("a decoder prompt has no mask here: every row of decoder_input_ids is "
                                       "read whole"),
    "position_ids": _refused("the program derives positions from attention_mask, as transformers does by default"),
    "past_key_values": _refused("the program keeps its own cache; a transformers cache cannot be passed in"),
    "encoder_outputs": _refused("the program runs its encoder itself"),
}


def refusal(name: str, value) -> str | None:
    """Why a generation_config / generate value of field (or generate argument) `name`
    cannot be honoured, or None (no refusal, or an off value). Fixed fields are the
    caller's to check against the program's value."""
    field = FIELDS.get(name, CALL_ARGUMENTS.get(name))
    if field is None or field.how != REFUSED:
        return None
    return None if any(_equal(value, v) for v in field.off) else field.reason


def _equal(value, off) -> bool:
    """value == off as transformers compares it (guidance_scale 1 or 1.0), False where
    == is not a truth value (an array)."""
    try:
        return value is off or bool(value == off)
    except (TypeError, ValueError):
        return False
