"""The generation library with a model of its own: the minimal example of
docs/extending.md.

`toy` is a one-layer encoder-decoder written here with the builder (embedding
encoder; a decoder layer with cached self-attention and cross-attention, no
weights in the attention but a query projection), handed to
`build_generation` through the EncoderDecoder interface. Its generate is
checked against a plain numpy loop over the same network that recomputes the
whole prefix at every step (no cache): greedy, with a decoder prompt, with
processors, and beam search (the returned hypotheses' scores are re-derived by
teacher forcing in numpy).
"""
import numpy as np
import pytest

import tensorvm
from tensorvm import ops as T
from tensorvm.pycompiler.generation import EncoderDecoder, TokenIds, build_generation
from tensorvm.pycompiler.types import ObjectType, Tensor

KVCache = ObjectType("KVCache")
D, V, EOS, PAD, START, MAX_POS = 8, 12, 2, 0, 1, 16


def weights(seed=0):
    rng = np.random.default_rng(seed)
    return {"emb": rng.standard_normal((V, D)).astype(np.float32),
            "pos": (0.5 * rng.standard_normal((MAX_POS, D))).astype(np.float32),
            "wq": (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32),
            "out": (2 * rng.standard_normal((V, D))).astype(np.float32)}


def build_toy(w, defaults):
    pb = tensorvm.ProgramBuilder(weights=w, meta={"model_type": "toy", "pad_token_id": PAD, "eos_token_id": EOS,
                                                  "decoder_start_token_id": START, "decoder_vocab_size": V,
                                                  "max_position_embeddings": MAX_POS, "generation": defaults})

    @pb.function
    def encode(input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        return T.tanh(T.embedding(input_ids, T.param("emb")))

    @pb.function
    def source_mask(attention_mask: Tensor) -> Tensor:
        return T.reshape(T.cast(attention_mask, "bool"), [T.size(attention_mask, 0), 1, 1, T.size(attention_mask, 1)])

    @pb.function
    def init_cache(states: Tensor, rows: int, max_len: int) -> KVCache:
        kv = T.unsqueeze(states, 1)  # [batch, 1 head, source_len, D]: keys and values are the states
        return T.kv_set_cross(T.kv_cache(1, rows, 1, D, max_len), 0, kv, kv)

    def layer(x, cache, smask, self_mask, n):
        rows = T.size(x, 0)
        k = T.unsqueeze(x, 1)
        q = T.unsqueeze(T.linear(x, T.param("wq")), 1)
        k_all, v_all = T.kv_append(cache, 0, k, k)
        h = T.add(x, T.reshape(T.attention(q, k_all, v_all, self_mask, scale=D ** -0.5), [rows, n, D]))
        ck, cv = T.kv_cross(cache, 0)
        batch = T.size(ck, 0)
        q = T.reshape(h, [batch, 1, T.mul(T.floordiv(rows, batch), n), D])  # a sentence's rows are its queries
        return T.add(h, T.reshape(T.attention(q, ck, cv, smask, scale=D ** -0.5), [rows, n, D]))

    def embed(tokens, start, end):
        return T.add(T.embedding(tokens, T.param("emb")), T.slice(T.param("pos"), 0, start, end))

    @pb.function
    def prefill(cache: KVCache, tokens: Tensor, smask: Tensor) -> KVCache:
        n = T.size(tokens, 1)
        pos = T.arange(0, n)
        causal = T.le(T.reshape(pos, [1, n]), T.reshape(pos, [n, 1]))
        layer(embed(tokens, 0, n), cache, smask, causal, n)
        return cache

    @pb.function
    def decode_step(cache: KVCache, tokens: Tensor, smask: Tensor, position: int) -> Tensor:
        h = layer(embed(tokens, position, T.add(position, 1)), cache, smask, None, 1)
        return T.linear(T.reshape(h, [T.size(h, 0), D]), T.param("out"))

    model = EncoderDecoder(encode=encode, source_mask=source_mask, init_cache=init_cache, prefill=prefill,
                           decode_step=decode_step, reorder=lambda cache, index: T.kv_reorder(cache, index),
                           ids=TokenIds(eos=EOS, pad=PAD, vocab_size=V, decoder_start=START), max_positions=MAX_POS)
    build_generation(pb, model, defaults)
    return pb


# ---------------------------------------------------------------- numpy reference

def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ref_logits(w, src, src_mask, prefix):
    """Next-token logits of one row: the whole prefix through the network, no cache."""
    n = len(prefix)
    x = w["emb"][prefix] + w["pos"][:n]
    q = x @ w["wq"].T
    s = q @ x.T * D ** -0.5 + np.where(np.tril(np.ones((n, n), bool)), 0, -np.inf)
    h = x + _softmax(s) @ x
    states = np.tanh(w["emb"][src])
    s = h @ states.T * D ** -0.5 + np.where(src_mask.astype(bool), 0, -np.inf)
    h = h + _softmax(s) @ states
    return h[-1] @ w["out"].T


def ref_greedy(w, ids, mask, prompt, max_length, min_length=0):
    out = []
    for b in range(ids.shape[0]):
        seq, done = list(prompt[b]), False
        while len(seq) < max_length and not done:
            logits = ref_logits(w, ids[b], mask[b], seq)
            if len(seq) < min_length:
                logits[EOS] = -np.inf
            seq.append(int(np.argmax(logits)))
            done = seq[-1] == EOS
        out.append(seq)
    width = max(len(s) for s in out)
    return np.array([s + [PAD] * (width - len(s)) for s in out], np.int64)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    w = weights()
    path = build_toy(w, {"max_length": 10, "num_beams": 1}).save(tmp_path_factory.mktemp("toy") / "toy.tvm")
    return w, tensorvm.load(path)


def _sources(seed, batch=3):
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, V, size=(batch, 6))
    mask = np.ones_like(ids)
    mask[1:, 4:] = 0
    return ids, mask


def test_greedy_matches_numpy(toy):
    w, prog = toy
    for seed in range(4):
        ids, mask = _sources(seed)
        start = np.full((3, 1), START)
        np.testing.assert_array_equal(prog.generate(ids, mask), ref_greedy(w, ids, mask, start, 10))


def test_decoder_prompt_matches_numpy(toy):
    w, prog = toy
    ids, mask = _sources(7)
    prompt = np.array([[START, 3, 4, 5], [START, 9, 9, 8], [START, 6, 3, 11]])
    for engine in ("vm", "replay"):
        got = prog.generate(ids, mask, decoder_input_ids=prompt, max_new_tokens=6, engine=engine)
        np.testing.assert_array_equal(got, ref_greedy(w, ids, mask, prompt, 10))


def test_processor_matches_numpy(toy):
    w, prog = toy
    ids, mask = _sources(3)
    got = prog.generate(ids, mask, min_length=8, max_length=12)
    np.testing.assert_array_equal(got, ref_greedy(w, ids, mask, np.full((3, 1), START), 12, min_length=8))


def test_beam_search_scores(toy):
    """Each returned hypothesis' score is its sum of log-probs (recomputed in numpy by
    teacher forcing) over its generated length; a sentence's two are distinct, best first."""
    w, prog = toy
    ids, mask = _sources(11)
    out = prog.generate(ids, mask, num_beams=4, num_return_sequences=2, output_scores=True, max_length=8)

    def score(b, seq):
        seq = list(seq)
        if EOS in seq:  # what follows the first EOS is padding
            seq = seq[:seq.index(EOS) + 1]
        logp = [np.log(_softmax(ref_logits(w, ids[b], mask[b], seq[:i]))[seq[i]]) for i in range(1, len(seq))]
        return sum(logp) / (len(seq) - 1)

    for r, seq in enumerate(out.sequences):
        assert abs(score(r // 2, seq) - out.sequences_scores[r]) < 1e-4
    for b in range(3):
        assert out.sequences_scores[2 * b] >= out.sequences_scores[2 * b + 1]
        assert out.sequences[2 * b].tolist() != out.sequences[2 * b + 1].tolist()
