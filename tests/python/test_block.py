"""The BART-style decoder block written once with the op front-end, checked five ways:
VM (tensorvm.load(...).run), replay, eager C++ ops, eager reference ops, and an
independent plain-torch implementation written here; plus the greedy while_loop toy."""
import numpy as np
import pytest

import tensorvm

import decoder_block as db
from pyc_helpers import HAS_VM, requires_ops, requires_vm

BLOCK_OPS = ("linear", "attention", "layer_norm", "silu", "reshape", "transpose", "size", "arange", "le", "ne", "add")
TOY_OPS = BLOCK_OPS + ("embedding", "slice", "squeeze", "argmax", "where", "concat", "unsqueeze", "logical_or", "eq",
                       "logical_and", "logical_not", "all", "lt", "sub")
pytestmark = requires_ops(*BLOCK_OPS)

CFG = db.BlockConfig(d_model=16, heads=4, ffn_dim=32)
LAYERS = 2


def torch_decoder(cfg, w, x, enc, source_mask, layers):
    """BART post-LN decoder layers in plain torch math (float64), independent of tensorvm."""
    torch = pytest.importorskip("torch")
    t = {k: torch.tensor(np.asarray(v), dtype=torch.float64) for k, v in w.items()}
    x = torch.tensor(x, dtype=torch.float64)
    enc = torch.tensor(enc, dtype=torch.float64)
    keep = torch.tensor(source_mask) != 0  # [B, S]
    B, Tq, d = x.shape
    H, Dh = cfg.heads, cfg.d_model // cfg.heads

    def lin(h, name, layer):
        p = f"model.decoder.layers.{layer}.{name}"
        return h @ t[p + ".weight"].T + t[p + ".bias"]

    def ln(h, name, layer):
        p = f"model.decoder.layers.{layer}.{name}"
        mu = h.mean(-1, keepdim=True)
        var = ((h - mu) ** 2).mean(-1, keepdim=True)
        return (h - mu) / torch.sqrt(var + cfg.eps) * t[p + ".weight"] + t[p + ".bias"]

    def attn(h, kv, allowed, name, layer):
        q = lin(h, name + ".q_proj", layer).view(B, -1, H, Dh).transpose(1, 2)
        k = lin(kv, name + ".k_proj", layer).view(B, -1, H, Dh).transpose(1, 2)
        v = lin(kv, name + ".v_proj", layer).view(B, -1, H, Dh).transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) * Dh ** -0.5
        scores = scores.masked_fill(~allowed, float("-inf"))
        p = torch.exp(scores - scores.amax(-1, keepdim=True))
        p = p / p.sum(-1, keepdim=True)
        out = (p @ v).transpose(1, 2).reshape(B, -1, d)
        return lin(out, name + ".out_proj", layer)

    causal = torch.ones(Tq, Tq, dtype=torch.bool).tril()
    for layer in range(layers):
        x = ln(x + attn(x, x, causal, "self_attn", layer), "self_attn_layer_norm", layer)
        x = ln(x + attn(x, enc, keep[:, None, None, :], "encoder_attn", layer), "encoder_attn_layer_norm", layer)
        h = lin(x, "fc1", layer)
        h = h * torch.sigmoid(h)
        x = ln(x + lin(h, "fc2", layer), "final_layer_norm", layer)
    return x.numpy()


def inputs(seed=1, B=3, Tq=5, S=7):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, Tq, CFG.d_model)).astype(np.float32)
    enc = rng.standard_normal((B, S, CFG.d_model)).astype(np.float32)
    mask = np.ones((B, S), np.int64)
    mask[1, 4:] = 0  # padded source rows
    if B > 2:
        mask[2, 1:] = 0
    return x, enc, mask


def close(got, want, what):
    got = np.asarray(got, np.float64)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert err < 1e-5, f"{what}: max relative error {err:.3g}"


@pytest.fixture(scope="module")
def weights():
    return db.random_weights(CFG, layers=LAYERS, seed=0, vocab=13)


@pytest.fixture(scope="module")
def block_program(weights, tmp_path_factory):
    pb = db.build_block(CFG, weights, layers=LAYERS)
    return pb, tensorvm.load(pb.save(tmp_path_factory.mktemp("block") / "block.tvm"))


def test_block_traces_once_and_is_called_per_layer(block_program):
    pb, prog = block_program
    text = prog.ir
    assert text.count("def block(") == 1
    assert "block_0 = block(x, encoder_states, source_mask, 0)" in text
    assert "block_1 = block(block_0, encoder_states, source_mask, 1)" in text
    assert prog.functions == ["block", "decoder"]
    assert prog.meta["d_model"] == CFG.d_model
    assert len(prog.weights_info()) == 26 * LAYERS  # the toy tables are not used, so not saved


@pytest.mark.parametrize("seed", [1, 2])
def test_block_five_ways_agree(weights, block_program, seed):
    pb, prog = block_program
    x, enc, mask = inputs(seed)
    want = torch_decoder(CFG, weights, x, enc, mask, LAYERS)
    with tensorvm.mode("cpp"):
        close(pb.functions["decoder"](x, enc, mask), want, "eager cpp")
    with tensorvm.mode("reference"), tensorvm.weights(weights):
        h = x
        for layer in range(LAYERS):
            h = db.decoder_block(CFG, h, enc, mask, layer)
        close(h, want, "eager reference")
    close(prog.replay("decoder", x, enc, mask), want, "replay")
    if HAS_VM:
        close(prog.run("decoder", x, enc, mask), want, "vm")


@requires_vm
def test_block_in_vm(weights, block_program):
    pb, prog = block_program
    x, enc, mask = inputs(3, B=2, Tq=1, S=4)  # one decode position
    want = torch_decoder(CFG, weights, x, enc, mask, LAYERS)
    close(prog.run("decoder", x, enc, mask), want, "vm")
    close(prog.run("block", x, enc, mask, 0), torch_decoder(CFG, weights, x, enc, mask, 1), "vm single layer")


def test_padding_changes_nothing_but_padded_keys(weights, block_program):
    """Masked source positions must not influence the result: change them, get the same output."""
    pb, prog = block_program
    x, enc, mask = inputs(4)
    enc2 = enc.copy()
    enc2[1, 4:] += 100.0
    enc2[2, 1:] -= 50.0
    np.testing.assert_allclose(prog.replay("decoder", x, enc2, mask), prog.replay("decoder", x, enc, mask),
                               rtol=1e-5, atol=1e-5)


@requires_ops(*TOY_OPS)
@requires_vm
def test_toy_greedy_loop_vm_equals_replay(weights, tmp_path):
    pb = db.build_toy_generator(CFG, weights, layers=LAYERS, eos=2, pad=0)
    text = str(pb.program())
    assert "while_loop(keep_going, step_fn, " in text
    prog = tensorvm.load(pb.save(tmp_path / "toy.tvm"))
    _, enc, mask = inputs(5)
    start = np.array([[1], [2], [5]], np.int64)  # row 1 starts finished
    for steps in (0, 1, 4, 9):
        got = prog.run("generate", enc, mask, start, steps)
        rep = prog.replay("generate", enc, mask, start, steps)
        assert got.dtype == np.int64 and np.array_equal(got, rep), (steps, got, rep)
        assert got.shape[0] == 3 and got.shape[1] <= 1 + steps
        assert (got[1, 1:] == 0).all()  # a finished row only gets padding
    eager = pb.functions["generate"](enc, mask, start, 9)
    assert np.array_equal(eager, prog.run("generate", enc, mask, start, 9))


@requires_ops(*TOY_OPS)
def test_toy_loop_stops_at_eos(weights, tmp_path):
    """With every row finished at the start, the loop body never runs."""
    pb = db.build_toy_generator(CFG, weights, layers=1, eos=2)
    prog = tensorvm.load(pb.save(tmp_path / "toy.tvm"))
    _, enc, mask = inputs(6)
    start = np.full((3, 1), 2, np.int64)
    assert np.array_equal(prog.replay("generate", enc, mask, start, 5), start)
