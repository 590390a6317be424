"""Every transformers GenerationConfig field is honoured or refused with its reason
(pycompiler/generation/config_fields.py), at import and at generate; a checkpoint's
max_new_tokens, output_scores and return_dict_in_generate against transformers itself."""
from __future__ import annotations

import json
import re
import shutil
import types

import numpy as np
import pytest
import torch
import transformers

import tensorvm
from decoder_only_helpers import checkpoint, left_padded
from marian_fixtures import hf
from parity_helpers import source_batches
from tensorvm.pycompiler.generation import config_fields
from tensorvm.pycompiler.generation.config_fields import FIELDS, HONOURED, NOT_APPLICABLE, REFUSED
from tensorvm.pycompiler.generation.search import generation_config_defaults
from tensorvm.pycompiler.importers import UnsupportedConfig
from tensorvm.pycompiler.importers.common import generation_options, start_and_pad

# A value of each refused field that asks for what the program does not compute.
REFUSED_SAMPLES = {
    "max_time": 5.0, "stop_strings": ["\n"], "use_mtp": True, "penalty_alpha": 0.6, "dola_layers": "high",
    "num_beam_groups": 2, "diversity_penalty": 0.5, "constraints": ["a constraint"], "force_words_ids": [[5]],
    "low_memory": True, "cache_implementation": "quantized", "top_h": 0.4, "eta_cutoff": 1e-3,
    "encoder_repetition_penalty": 1.3, "encoder_no_repeat_ngram_size": 2, "remove_invalid_values": True,
    "exponential_decay_length_penalty": [5, 1.5], "token_healing": True, "guidance_scale": 3.0,
    "watermarking_config": {"greenlist_ratio": 0.25}, "output_attentions": True, "output_hidden_states": True,
    "prompt_lookup_num_tokens": 10, "assistant_early_exit": 4, "speculation_type": "dflash",
}
# Fields the importer reads outside the generate inputs' loop.
READ_APART = {"eos_token_id": "importers/common.py eos_ids",
              "return_dict_in_generate": "importers/common.py generation_options"}


def test_every_generation_config_field_is_classified():
    """The audit: a field of the installed transformers that the table does not
    classify fails here (a new release cannot slip one past)."""
    fields = transformers.GenerationConfig().to_dict()
    missing = sorted(set(fields) - set(FIELDS))
    assert not missing, f"GenerationConfig fields of transformers {transformers.__version__} that " \
                        f"pycompiler/generation/config_fields.py does not classify: {missing}"
    for name in fields:
        field = FIELDS[name]
        assert field.how in (HONOURED, REFUSED, NOT_APPLICABLE) and field.reason, name


def test_honoured_fields_are_read_at_import():
    """An honoured field is a generate input whose checkpoint value the importer reads
    (it has a default in the registry), is read apart, or is fixed at import."""
    read = set(generation_config_defaults()) | set(READ_APART)
    for name in transformers.GenerationConfig().to_dict():
        field = FIELDS[name]
        if field.how == HONOURED and not field.fixed:
            assert name in read, f"{name} is classified honoured but the importer does not read it"


def test_defaults_are_never_refused():
    """transformers' own defaults (GenerationConfig() and the global generation
    defaults) leave every refused feature off."""
    blank = transformers.GenerationConfig()
    defaults = blank._get_default_generation_params()
    for name, field in FIELDS.items():
        if field.how == REFUSED:
            assert config_fields.refusal(name, getattr(blank, name)) is None, name
            assert config_fields.refusal(name, defaults.get(name)) is None, name


def _options(**fields):
    gen = transformers.GenerationConfig()
    for name, value in fields.items():  # set as a checkpoint's file would, without GenerationConfig's validation
        setattr(gen, name, value)
    return generation_options(types.SimpleNamespace(is_encoder_decoder=False), gen, vocab_size=97, eos=2,
                              default_max_length=None)


@pytest.mark.parametrize("name", sorted(n for n, f in FIELDS.items() if f.how == REFUSED))
def test_import_refuses_with_the_reason(name):
    value = REFUSED_SAMPLES[name]
    with pytest.raises(UnsupportedConfig, match=re.escape(f"generation_config.{name} = {value!r} is not supported: "
                                                          f"{FIELDS[name].reason}")):
        _options(**{name: value})


def test_import_accepts_off_values_and_not_applicable_fields():
    opts = _options(num_beam_groups=1, guidance_scale=1.0, cache_implementation="static", use_cache=False,
                    penalty_alpha=0.0, eta_cutoff=0.0, num_assistant_tokens=7, prefill_chunk_size=16)
    assert opts["max_length"] is None and opts["max_new_tokens"] is None


def test_import_refuses_an_unclassified_field(monkeypatch):
    """A field of a newer transformers (here: one dropped from the table) set to other
    than its default is refused, not ignored."""
    monkeypatch.setattr(config_fields, "FIELDS", {k: v for k, v in FIELDS.items() if k != "top_h"})
    _options()  # its default passes
    with pytest.raises(UnsupportedConfig, match="generation_config.top_h = 0.4 is not supported: the field is new"):
        _options(top_h=0.4)


def test_decoder_start_token():
    """transformers starts an encoder-decoder from bos_token_id when no
    decoder_start_token_id is set; one start id per row is refused, as is none at all."""
    config = types.SimpleNamespace(decoder_start_token_id=None, bos_token_id=None, pad_token_id=1)
    gen = transformers.GenerationConfig(bos_token_id=3)
    assert start_and_pad(config, gen, 2) == (3, 1)
    # No pad token anywhere: the first end token, as transformers' generate pads.
    config.pad_token_id = None
    assert start_and_pad(config, gen, (7, 2)) == (3, 7)
    gen.pad_token_id = [4, 5]
    with pytest.raises(UnsupportedConfig, match="several pad_token_ids"):
        start_and_pad(config, gen, 2)
    gen.pad_token_id = None
    gen.decoder_start_token_id = [4, 5]
    with pytest.raises(UnsupportedConfig, match="several decoder_start_token_ids \\[4, 5\\] are not supported"):
        start_and_pad(config, gen, 2)
    with pytest.raises(UnsupportedConfig, match="names no decoder_start_token_id"):
        start_and_pad(config, transformers.GenerationConfig(), 2)


def _with_generation_config(tmp_path, name, **fields):
    """A copy of checkpoint directory `name` with generation_config.json entries set."""
    ckpt = tmp_path / "ckpt"
    shutil.copytree(name, ckpt)
    path = ckpt / "generation_config.json"
    gen = json.loads(path.read_text()) if path.exists() else {}
    gen.update(fields)
    path.write_text(json.dumps(gen))
    return ckpt


def test_import_hf_refuses_before_writing(tmp_path):
    ckpt = _with_generation_config(tmp_path, checkpoint("gpt2-odd"), max_time=5.0)
    with pytest.raises(UnsupportedConfig, match="max_time = 5.0 is not supported: a wall-clock limit"):
        tensorvm.import_hf(ckpt, tmp_path / "out.tvm")
    assert not (tmp_path / "out.tvm").exists()


# ---- generate's keywords

@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpt2") / "m.tvm"
    tensorvm.import_hf(checkpoint("gpt2-odd"), out)
    return tensorvm.load(out)


PROMPT = np.array([[5, 9, 14, 3]])


@pytest.mark.parametrize("name", sorted(n for n, f in FIELDS.items() if f.how == REFUSED))
def test_generate_refuses_with_the_reason(gpt2, name):
    with pytest.raises(ValueError, match=re.escape(f"generate: {name}={REFUSED_SAMPLES[name]!r} is not supported: "
                                                   f"{FIELDS[name].reason}")):
        gpt2.generate(PROMPT, max_new_tokens=2, **{name: REFUSED_SAMPLES[name]})


@pytest.mark.parametrize("name", sorted(config_fields.CALL_ARGUMENTS))
def test_generate_refuses_transformers_arguments_it_lacks(gpt2, name):
    reason = config_fields.CALL_ARGUMENTS[name].reason
    with pytest.raises(ValueError, match=re.escape(f"is not supported: {reason}")):
        gpt2.generate(PROMPT, max_new_tokens=2, **{name: "x"})


def test_generate_accepts_what_changes_nothing(gpt2):
    plain = gpt2.generate(PROMPT, max_new_tokens=4)
    same = gpt2.generate(PROMPT, max_new_tokens=4, use_cache=False, num_beam_groups=1, guidance_scale=1,
                         cache_implementation="static", compile_config=None, logits_processor=None,
                         pad_token_id=gpt2.meta["pad_token_id"], synced_gpus=False, prefill_chunk_size=2)
    np.testing.assert_array_equal(same, plain)


def test_generate_refuses_another_value_of_a_field_fixed_at_import(gpt2):
    pad = gpt2.meta["pad_token_id"]
    with pytest.raises(ValueError, match=f"pad_token_id is fixed at import .*: this program's is {pad}, not 7"):
        gpt2.generate(PROMPT, pad_token_id=7)
    with pytest.raises(ValueError, match="decoder_start_token_id is fixed at import .*: it has none, not 0"):
        gpt2.generate(PROMPT, decoder_start_token_id=0)


def test_unknown_option_says_why(gpt2):
    with pytest.raises(TypeError, match="unknown option 'nonsense': it is no option of this program nor a field of "
                                        "transformers' GenerationConfig \\(this program takes \\["):
        gpt2.generate(PROMPT, nonsense=1)


# ---- a checkpoint's lengths and outputs, against transformers

@pytest.mark.parametrize("call", [{}, {"max_length": 30}, {"max_new_tokens": 3}, {"num_beams": 3}], ids=str)
def test_checkpoint_max_new_tokens_encoder_decoder(tmp_path, call):
    """transformers: the checkpoint's max_new_tokens wins over its max_length, and over
    a max_length passed to generate; a max_new_tokens passed to generate wins over it."""
    ckpt = _with_generation_config(tmp_path, hf.checkpoint_dir("tiny-untied"), max_length=40, max_new_tokens=5)
    tensorvm.import_hf(ckpt, tmp_path / "m.tvm")
    prog = tensorvm.load(tmp_path / "m.tvm")
    for ids, mask in source_batches(prog, 5, 3, 2):
        want = hf.generate(ckpt, ids, mask, **call)["sequences"]
        got = prog.generate(ids, mask, **call)
        np.testing.assert_array_equal(got, want)
    assert want.shape[1] <= 1 + call.get("max_new_tokens", 5)


def _decoder_only_case(tmp_path, **fields):
    ckpt = _with_generation_config(tmp_path, checkpoint("gpt2-odd"), **fields)
    tensorvm.import_hf(ckpt, tmp_path / "m.tvm")
    model = transformers.GPT2LMHeadModel.from_pretrained(ckpt, attn_implementation="eager").eval()
    ids, mask = left_padded([[5, 9, 14, 3, 7, 21], [40, 8]], pad=2)
    return tensorvm.load(tmp_path / "m.tvm"), model, ids, mask


def _transformers(model, ids, mask, **kw):
    with torch.no_grad():
        return model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), **kw)


def test_checkpoint_max_new_tokens_decoder_only(tmp_path):
    """The prompt counts: max_length = prompt length + the checkpoint's max_new_tokens."""
    prog, model, ids, mask = _decoder_only_case(tmp_path, max_length=40, max_new_tokens=4)
    for call in ({}, {"max_length": 30}, {"max_new_tokens": 2}):
        want = _transformers(model, ids, mask, **call).numpy()
        np.testing.assert_array_equal(prog.generate(ids, mask, **call), want)
    assert want.shape[1] == ids.shape[1] + 2


def test_checkpoint_output_options(tmp_path):
    """output_scores, output_logits and return_dict_in_generate of a generation_config
    shape the result as transformers' generate does."""
    prog, model, ids, mask = _decoder_only_case(tmp_path, max_new_tokens=3, output_scores=True, output_logits=True,
                                                return_dict_in_generate=True)
    want, got = _transformers(model, ids, mask), prog.generate(ids, mask)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    for mine, theirs in ((got.scores, want.scores), (got.logits, want.logits)):
        assert len(mine) == len(theirs) == 3
        for a, b in zip(mine, theirs):
            np.testing.assert_allclose(a, b.numpy(), atol=1e-4, rtol=0)
    # the call's keywords win over the checkpoint's
    np.testing.assert_array_equal(prog.generate(ids, mask, return_dict_in_generate=False, output_scores=False,
                                                output_logits=False), want.sequences.numpy())
