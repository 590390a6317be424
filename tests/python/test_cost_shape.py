"""The N + M property: a decode step costs the same at step 2 and step 100, and the
encoder and cross-attention projections run exactly once per generate call."""
import numpy as np
import pytest

from marian_fixtures import imported
from tensorvm import _C


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    ckpt, prog = imported("tiny-sepvocab-gelu", tmp_path_factory.mktemp("cost"))
    return prog


def _step_cost(session, profiler, cache, mask, position):
    profiler.reset()
    before = session.instructions_executed
    session.run("decode_step", [cache, np.array([[3]]), mask, position])
    ops = profiler.ops()
    weight_macs = sum(s["weight_macs"] for s in ops.values())
    return session.instructions_executed - before, weight_macs, ops["attention"]["macs"]


def test_decode_step_cost_is_constant(program):
    p = _C.Program.load(str(program.path))
    s = _C.Session(p)
    prof = _C.Profiler()
    s.set_profiler(prof)
    ids = np.array([[4, 5, 6, 7, 0]])
    mask = s.run("source_mask", [np.ones_like(ids)])[0]
    states = s.run("encode", [ids, np.ones_like(ids)])[0]
    cache = s.run("init_cache", [states, 1, 128])[0]
    last = min(100, program.meta["max_position_embeddings"] - 1)
    costs = {}
    for position in range(last + 1):
        cost = _step_cost(s, prof, cache, mask, position)
        if position in (2, 3, last):
            costs[position] = cost
    (i2, w2, a2), (_, _, a3), (il, wl, al) = costs[2], costs[3], costs[last]
    assert i2 == il > 0, "instructions per step must not grow with the step"
    assert w2 == wl > 0, "multiply-adds against weights per step must not grow with the step"
    # Self-attention reads every cached position (cross-attention a fixed source):
    # each step costs a constant amount more than the one before, no more.
    assert al - a2 == (last - 2) * (a3 - a2) > 0
    with pytest.raises(_C.VMError, match=r"index_select: .*out of range"):
        s.run("decode_step", [cache, np.array([[3]]), mask, program.meta["max_position_embeddings"]])


@pytest.mark.parametrize("new_tokens", [3, 12])
def test_encoder_and_cross_projections_run_once_per_generate(program, new_tokens):
    p = _C.Program.load(str(program.path))
    s = _C.Session(p)
    prof = _C.Profiler()
    s.set_profiler(prof)
    ids = np.array([[4, 5, 6, 7, 8, 9, 0], [4, 5, 0, 1, 1, 1, 1]])
    mask = (np.arange(7) < np.array([[7], [3]])).astype(np.int64)
    inputs = {"input_ids": ids, "attention_mask": mask, "max_new_tokens": new_tokens}
    if "num_beams" in p.function_info("generate")["params"]:
        inputs["num_beams"] = 1  # greedy: one row per sentence
    seq = s.run_named("generate", inputs)[0]
    calls = {k: v["count"] for k, v in prof.calls().items()}
    layers = program.meta.get("decoder_layers") or 2
    assert calls["encode"] == 1
    assert calls["init_cache"] == 1
    assert prof.ops()["kv_set_cross"]["count"] == layers
    assert calls["decode_step"] == seq.shape[1] - 1
    assert calls["encoder_layer"] == calls["encode"] * layers
