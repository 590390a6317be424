"""M2M100 / NLLB against transformers itself: encoder states within 1e-4, generate
token-exact (greedy, beam search with several returned sequences, the target
language as forced_bos_token_id at run time, a decoder prompt prefilled in one
pass), on a seeded random-weight checkpoint of odd sizes with a padded batch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorvm
from decoder_only_helpers import checkpoint
from parity_helpers import assert_encoder_states

NAME = "m2m100-odd"


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    import transformers

    out = tmp_path_factory.mktemp("m2m") / "m2m.tvm"
    tensorvm.import_hf(checkpoint(NAME), out)
    model = transformers.M2M100ForConditionalGeneration.from_pretrained(checkpoint(NAME), attn_implementation="eager")
    model.eval()
    return tensorvm.load(out), model


def _batch():
    """Right-padded sources ending with EOS, pad 1."""
    ids = np.array([[5, 6, 7, 8, 9, 2], [10, 11, 12, 2, 1, 1], [40, 2, 1, 1, 1, 1]])
    return ids, (ids != 1).astype(np.int64)


def _hf(model, ids, mask, **kw):
    with torch.no_grad():
        return model.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), do_sample=False,
                              **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}).numpy()


def test_encoder_states(case):
    prog, model = case
    ids, mask = _batch()
    assert_encoder_states(prog, model, ids, mask, atol=1e-4)


@pytest.mark.parametrize("options", [{}, {"num_beams": 3, "num_return_sequences": 2},
                                     {"forced_bos_token_id": 17}, {"forced_bos_token_id": 33, "num_beams": 4}],
                         ids=["greedy", "beam", "target-17", "target-33-beam"])
def test_generate(case, options):
    prog, model = case
    ids, mask = _batch()
    want = _hf(model, ids, mask, max_new_tokens=12, **options)
    np.testing.assert_array_equal(prog.generate(ids, mask, max_new_tokens=12, **options), want)


def test_decoder_prompt_prefilled(case):
    """NLLB-style: the decoder starts with [</s>, target language], given as a prompt."""
    prog, model = case
    ids, mask = _batch()
    prompt = np.array([[2, 21], [2, 22], [2, 21]])
    want = _hf(model, ids, mask, max_new_tokens=10, decoder_input_ids=prompt, num_beams=2)
    got = prog.generate(ids, mask, max_new_tokens=10, decoder_input_ids=prompt, num_beams=2)
    np.testing.assert_array_equal(got, want)
