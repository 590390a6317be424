#!/usr/bin/env python3
"""Superseded by train_copy_bart.py (the committed spec-copy-bart; this one never learned to
copy in its CPU budget, see tests/fixtures/data/README.md); kept for its word list and
tokenizer, which train_copy_bart.py reuses. It trains
tests/fixtures/data/spec-copy-lm (not committed), a small Qwen2ForCausalLM that quotes, from a passage,
the sentence that starts with two given words (an extractive task: its whole answer is a
contiguous span of its prompt, the setting prompt lookup is for):

    passage: <3..4 sentences of 8..14 words>
    quote from: <first two words of one sentence>
    quote: <that sentence, copied to its full stop><|endoftext|>

The words are real English in random order: the words of the licence texts in
/usr/share/common-licenses that the fixture's own tokenizer (a byte-level BPE of
VOCAB, trained on those texts) keeps as one token, no word twice in a passage. Random
order is the point: an earlier version trained on real sentences (stdlib docstrings),
and a d128 model memorised and paraphrased them in its CPU budget instead of copying;
with random words nothing can be recalled, only copied (the model has to learn
induction heads), and one token per word, never repeated, makes the copy rule exact
(a word's successor in the passage is the next token). Held-out prompts (held_out.jsonl)
are drawn with another seed: every held-out passage is new. Training reads 1..3 quotes
per passage (the later ones after the first's end token), and half of its rows
are "passage: ...\nrepeat: <the passage>": more copying to learn from per passage read.

The loss is on the answers only. Not reproducible across machines (the CPU's rounding):
the result is committed with build_info.json (spec fingerprint, SHA-256 of every file,
CPU, versions, held-out exact-copy rate); tests never train:

    python bench/speculative/train_copy_lm.py [--minutes 10]   # CPU minutes, one thread
    python bench/speculative/train_copy_lm.py --init DIR        # continue an earlier run
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_info import optimizer_step, set_lr, write_build_info  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "quality"))
from train_quality_lm import train_tokenizer as quality_tokenizer  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "data"
NAME = "spec-copy-lm"
VOCAB = 2048
LICENSES = Path("/usr/share/common-licenses")
HELD_OUT_PROMPTS = 48
SPEC = {
    "task": "quote-random-words", "hidden": 128, "layers": 2, "heads": 4, "kv_heads": 2, "ffn": 256,
    "context": 256, "queries": [1, 3], "repeat_share": 0.5, "batch": 32, "lr": 3e-3, "warmup": 100, "sentences": [3, 4], "words": [8, 14],
    "seed": 0, "tokenizer": f"byte-level BPE {VOCAB} on the licence texts", "stop_at_exact": 1.0,
}
WORD = re.compile(r"[A-Za-z]{3,12}")


def licence_texts() -> list[str]:
    return [p.read_text(encoding="utf-8", errors="replace") for p in sorted(LICENSES.iterdir())
            if p.is_file() and not p.is_symlink()]


def train_tokenizer(texts: list[str]) -> transformers.PreTrainedTokenizerFast:
    """quality-lm's kind of tokenizer (bench/quality/train_quality_lm.py), which tensorvm imports."""
    return transformers.PreTrainedTokenizerFast(tokenizer_object=quality_tokenizer(texts, VOCAB),
                                                eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                                pad_token="<|endoftext|>")


def word_list(tok, texts: list[str]) -> list[str]:
    """The licence texts' distinct lowercase words that the tokenizer keeps as one token (after a space)."""
    words = {w.lower() for t in texts for w in WORD.findall(t)}
    return sorted(w for w in words if len(tok(" " + w)["input_ids"]) == 1)


def example(words: list[str], rng: random.Random, queries: int = 1) -> tuple[str, str] | list[tuple[str, str]]:
    """(prompt, answer): a passage of random sentences and the one whose first two words are
    asked for. With queries > 1, a list: the first (prompt, answer) and the other queries on
    the same passage as ("\nquote from: ...\nquote:", answer) pairs (training reads them after
    the first answer's end token: more copying per passage read)."""
    lengths = [rng.randint(*SPEC["words"]) for _ in range(rng.randint(*SPEC["sentences"]))]
    flat = rng.sample(words, sum(lengths))  # no word twice
    sents = [flat[sum(lengths[:i]):sum(lengths[:i + 1])] for i in range(len(lengths))]
    passage = " ".join(" ".join(s) + "." for s in sents)
    asked = [rng.randrange(len(sents)) for _ in range(queries)]
    pairs = [(f"\nquote from: {' '.join(sents[i][:2])}\nquote:", f" {' '.join(sents[i])}.") for i in asked]
    first = (f"passage: {passage}{pairs[0][0]}", pairs[0][1])
    return first if queries == 1 else [first] + pairs[1:]


def encode(tok, prompt: str, answer: str) -> tuple[list[int], int]:
    p = tok(prompt)["input_ids"]
    return p + tok(answer)["input_ids"] + [tok.eos_token_id], len(p)


def make_batch(tok, words, rng, eos) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rows = []
    while len(rows) < SPEC["batch"]:
        n = rng.randint(*SPEC["queries"])
        (prompt, answer), *more = example(words, rng, n) if n > 1 else [example(words, rng)]
        if rng.random() < SPEC["repeat_share"]:  # the whole passage repeated: every token a copy to learn from
            passage = prompt[len("passage: "):prompt.index("\n")]
            (prompt, answer), more = (f"passage: {passage}\nrepeat:", f" {passage}"), []
        ids, n_prompt = encode(tok, prompt, answer)
        spans = [(n_prompt, len(ids))]  # the answers' tokens (end token included)
        for q, a in more:
            ids += tok(q)["input_ids"]
            start = len(ids)
            ids += tok(a)["input_ids"] + [eos]
            spans.append((start, len(ids)))
        if len(ids) <= SPEC["context"]:
            rows.append((ids, spans))
    width = max(len(ids) for ids, _ in rows)
    x = torch.full((len(rows), width), eos)
    w = torch.zeros((len(rows), width))
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (ids, spans) in enumerate(rows):
        x[i, :len(ids)] = torch.tensor(ids)
        for a, b in spans:
            w[i, a:b] = 1.0  # weight of predicting token t (from position t-1)
        mask[i, :len(ids)] = 1
    return x, w, mask


def held_out_scores(model, tok, held: list[dict], greedy: int) -> tuple[float, float]:
    """(mean cross-entropy on the answers' tokens, fraction of the first `greedy` held-out
    answers that greedy decoding reproduces exactly, end token included)."""
    model.eval()
    total = n = exact = 0
    with torch.no_grad():
        for ex in held:
            ids, n_prompt = encode(tok, ex["prompt"], ex["answer"])
            x = torch.tensor([ids])
            logits = model(input_ids=x).logits[0, n_prompt - 1:-1]
            total += float(torch.nn.functional.cross_entropy(logits, x[0, n_prompt:], reduction="sum"))
            n += len(ids) - n_prompt
        for ex in held[:greedy]:
            p = tok(ex["prompt"], return_tensors="pt")["input_ids"]
            want = tok(ex["answer"])["input_ids"] + [tok.eos_token_id]
            out = model.generate(p, attention_mask=torch.ones_like(p), max_new_tokens=len(want) + 4,
                                 do_sample=False, pad_token_id=tok.eos_token_id)[0, p.shape[1]:].tolist()
            exact += out[:len(want)] == want
    model.train()
    return total / n, exact / greedy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="training time (CPU minutes)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(DATA / NAME))
    ap.add_argument("--init", help="continue from the weights of an earlier run's output directory")
    args = ap.parse_args()
    s = SPEC
    torch.manual_seed(s["seed"])
    torch.set_num_threads(args.threads)
    texts = licence_texts()
    # a continuation keeps its tokenizer (the words are those it keeps whole)
    tok = transformers.AutoTokenizer.from_pretrained(args.init) if args.init else train_tokenizer(texts)
    eos = tok.eos_token_id
    words = word_list(tok, texts)
    earlier = json.loads((Path(args.init) / "build_info.json").read_text()) if args.init else None
    # a continuation draws other training passages than the run it continues
    rng = random.Random(s["seed"] + (100 + earlier["steps"] if earlier else 0))
    held_rng = random.Random(s["seed"] + 1)
    held = [dict(zip(("prompt", "answer"), example(words, held_rng))) for _ in range(HELD_OUT_PROMPTS)]
    print(f"{len(words)} words", flush=True)
    config = transformers.Qwen2Config(
        vocab_size=len(tok), hidden_size=s["hidden"], intermediate_size=s["ffn"], num_hidden_layers=s["layers"],
        num_attention_heads=s["heads"], num_key_value_heads=s["kv_heads"], max_position_embeddings=512,
        rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=True, bos_token_id=eos, eos_token_id=eos,
        pad_token_id=eos)
    model = transformers.Qwen2ForCausalLM(config)
    if args.init:  # the lr schedule starts over; build_info records what it continued
        model.load_state_dict(transformers.Qwen2ForCausalLM.from_pretrained(args.init).state_dict())
    opt = torch.optim.AdamW(model.parameters(), lr=s["lr"], weight_decay=0.1)
    model.train()
    t0, c0, step, losses, best = time.time(), time.process_time(), 0, [], (-1.0, float("inf"), None, 0)
    budget = args.minutes * 60
    perfect = 0  # evaluations in a row at stop_at_exact: two end the training early
    while time.process_time() - c0 < budget and perfect < 2:  # CPU time: a shared machine slows, not shortens, training
        set_lr(opt, s["lr"], step, s["warmup"], (time.process_time() - c0) / budget)
        x, w, mask = make_batch(tok, words, rng, eos)
        logits = model(input_ids=x, attention_mask=mask).logits[:, :-1]
        ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), x[:, 1:], reduction="none")
        loss = (ce * w[:, 1:]).sum() / w[:, 1:].sum()
        optimizer_step(opt, model, loss)
        losses.append(float(loss.detach()))
        step += 1
        if step % 250 == 0:
            h, exact = held_out_scores(model, tok, held, 16)
            if (exact, -h) > (best[0], -best[1]):
                best = (exact, h, {k: v.detach().clone() for k, v in model.state_dict().items()}, step)
            perfect = perfect + 1 if exact >= s["stop_at_exact"] else 0
            print(f"step {step} answer ce {sum(losses[-100:]) / 100:.3f} held-out {h:.3f} exact {exact:.2f} "
                  f"({time.time() - t0:.0f}s, cpu {time.process_time() - c0:.0f}s)", flush=True)
    if best[2] is not None:
        model.load_state_dict(best[2])
    model.eval()
    h, exact = held_out_scores(model, tok, held, len(held))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for f in out.iterdir():
        f.unlink()
    model.generation_config = transformers.GenerationConfig(bos_token_id=eos, eos_token_id=eos, pad_token_id=eos,
                                                            do_sample=False)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    (out / "held_out.jsonl").write_text("".join(json.dumps(e) + "\n" for e in held), encoding="utf-8")
    info = {"source": f"the words of {LICENSES} (one token each) in random order; "
                      f"held-out prompts drawn with seed {s['seed'] + 1}",
            "words": len(words), "steps": step, "best_step": best[3],
            "final_train_answer_ce": round(sum(losses[-100:]) / max(1, len(losses[-100:])), 4),
            "held_out_answer_ce": round(h, 4), "held_out_greedy_exact": round(exact, 4),
            "held_out_prompts": len(held), "seconds": round(time.time() - t0),
            "cpu_seconds": round(time.process_time() - c0), "threads": args.threads}
    if args.init:
        info["continued_from"] = {k: earlier[k] for k in ("steps", "cpu_seconds", "held_out_greedy_exact",
                                                          "spec_fingerprint", "continued_from") if k in earlier}
    print(json.dumps(write_build_info(out, SPEC, info), indent=1))


if __name__ == "__main__":
    main()
