#!/usr/bin/env python3
"""Trains the committed copy-task model for prompt-lookup decoding:
tests/fixtures/data/spec-copy-lm, a small Qwen2ForCausalLM that extracts, from a
paragraph, the sentence holding a key word (an extractive summary: its output copies a
span of its prompt, the setting prompt lookup is for):

    <paragraph of 2..4 sentences>
    Key: <a word found in one sentence only>
    Sentence: <that sentence, copied><|endoftext|>

The sentences are real English: the docstrings of Python's standard library and the
licence texts of /usr/share/common-licenses, split into sentences; paragraphs are drawn
at random from them. The docstrings of HELD_OUT_MODULES are never trained on: the
committed held_out.jsonl (HELD_OUT_PROMPTS prompts with the expected sentence) is made
from them. The tokenizer is quality-lm's (a byte-level BPE of 1024 trained on the same
kinds of text; copied, so tensorvm imports it as it imports quality-lm's).

The loss is on the answer (weight 1) and on the paragraph (PROMPT_WEIGHT: what little
language modelling keeps the embeddings sensible). Not reproducible across machines (the
stdlib's docstrings, the CPU's rounding): the result is committed with build_info.json
(spec fingerprint, SHA-256 of every file, CPU, versions, losses); tests never train:

    python bench/speculative/train_copy_lm.py [--minutes 7]   # CPU minutes
"""
from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import sysconfig
import time
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_info import optimizer_step, write_build_info  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "quality"))
from train_quality_lm import docstrings  # noqa: E402  (quality-lm's reader of the stdlib)

DATA = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "data"
NAME = "spec-copy-lm"
TOKENIZER = DATA / "quality-lm"
LICENSES = Path("/usr/share/common-licenses")
HELD_OUT_MODULES = ("argparse", "pathlib", "subprocess", "typing", "zipfile")
HELD_OUT_PROMPTS = 48
SPEC = {
    "hidden": 128, "layers": 3, "heads": 4, "kv_heads": 2, "ffn": 384, "context": 160, "batch": 24, "lr": 4e-3,
    "warmup": 100, "prompt_weight": 0.1, "sentences": [2, 4], "sentence_chars": [30, 120], "seed": 0,
    "held_out_modules": HELD_OUT_MODULES, "tokenizer": "quality-lm", "shuffled": 0.5,
}
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
WORD = re.compile(r"[A-Za-z]{5,}")


def sentences_of(text: str) -> list[str]:
    lo, hi = SPEC["sentence_chars"]
    out = []
    for para in re.split(r"\n\s*\n", text):
        flat = re.sub(r"\s+", " ", para).strip()
        for s in SENTENCE_END.split(flat):
            if lo <= len(s) <= hi and s[-1] in ".!?" and not re.search(r"[>|=]{2}|::|\(\)", s):
                out.append(s)
    return out


def sentence_pools() -> tuple[list[str], list[str]]:
    """(training sentences, held-out sentences), each list without repeats, sorted."""
    train, held = set(), set()
    for p in sorted(LICENSES.iterdir()):
        if p.is_file() and not p.is_symlink():
            train.update(sentences_of(p.read_text(encoding="utf-8", errors="replace")))
    for module in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        pool = held if module.stem in HELD_OUT_MODULES else train
        for d in docstrings(module, min_chars=0):
            pool.update(sentences_of(d))
    return sorted(train), sorted(held - train)


def example(pool: list[str], rng: random.Random, shuffled: float | None = None) -> tuple[str, str] | None:
    """(prompt, answer) for one random paragraph, or None when no word is unique to a sentence.
    Training draws SPEC["shuffled"] of its paragraphs with each sentence's words shuffled:
    with real sentences only, the model learnt to recall the (few thousand) training
    sentences instead of copying (held-out loss rising while the training loss fell)."""
    n = rng.randint(*SPEC["sentences"])
    sents = rng.sample(pool, n)
    if rng.random() < (SPEC["shuffled"] if shuffled is None else shuffled):  # words in random order: nothing to recall, only to copy
        words = [s.rstrip(".!?").split() for s in sents]
        sents = [" ".join(rng.sample(w, len(w))) + "." for w in words]
    words = [set(w.lower() for w in WORD.findall(s)) for s in sents]
    order = list(range(n))
    rng.shuffle(order)
    for i in order:
        unique = sorted(words[i] - set().union(*(words[j] for j in range(n) if j != i)))
        if unique:
            key = rng.choice(unique)
            return f"{' '.join(sents)}\nKey: {key}\nSentence:", f" {sents[i]}"
    return None


def encode(tok, prompt: str, answer: str) -> tuple[list[int], int]:
    p = tok(prompt)["input_ids"]
    return p + tok(answer)["input_ids"] + [tok.eos_token_id], len(p)


def make_batch(tok, pool, rng, eos) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    s = SPEC
    rows = []
    while len(rows) < s["batch"]:
        ex = example(pool, rng)
        if ex is not None:
            ids, n_prompt = encode(tok, *ex)
            if len(ids) <= s["context"]:
                rows.append((ids, n_prompt))
    width = max(len(ids) for ids, _ in rows)
    x = torch.full((len(rows), width), eos)
    w = torch.zeros((len(rows), width))
    for i, (ids, n_prompt) in enumerate(rows):
        x[i, :len(ids)] = torch.tensor(ids)
        w[i, 1:n_prompt] = s["prompt_weight"]
        w[i, n_prompt:len(ids)] = 1.0  # weight of predicting token t (from position t-1)
    mask = (w > 0).long()
    mask[:, 0] = 1
    return x, w, mask


def answer_loss(model, tok, held: list[dict]) -> tuple[float, float]:
    """(mean cross-entropy on the answers' tokens, fraction of greedy answers exact) on held-out prompts."""
    model.eval()
    total = n = exact = 0
    with torch.no_grad():
        for ex in held:
            ids, n_prompt = encode(tok, ex["prompt"], ex["answer"])
            x = torch.tensor([ids])
            logits = model(input_ids=x).logits[0, n_prompt - 1:-1]
            total += float(torch.nn.functional.cross_entropy(logits, x[0, n_prompt:], reduction="sum"))
            n += len(ids) - n_prompt
        for ex in held[:16]:
            p = tok(ex["prompt"], return_tensors="pt")["input_ids"]
            want = tok(ex["answer"])["input_ids"] + [tok.eos_token_id]
            out = model.generate(p, max_new_tokens=len(want) + 4, do_sample=False,
                                 pad_token_id=tok.eos_token_id)[0, p.shape[1]:].tolist()
            exact += out[:len(want)] == want
    model.train()
    return total / n, exact / min(16, len(held))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=7.0, help="training time (CPU minutes)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(DATA / NAME))
    ap.add_argument("--init", help="continue from the weights of an earlier run's output directory")
    args = ap.parse_args()
    s = SPEC
    torch.manual_seed(s["seed"])
    torch.set_num_threads(args.threads)
    tok = transformers.AutoTokenizer.from_pretrained(TOKENIZER)
    eos = tok.eos_token_id
    train_pool, held_pool = sentence_pools()
    rng = random.Random(s["seed"])
    held_rng = random.Random(s["seed"] + 1)
    held = []
    while len(held) < HELD_OUT_PROMPTS:
        ex = example(held_pool, held_rng, shuffled=0.0)
        if ex is not None and len(encode(tok, *ex)[0]) <= s["context"]:
            held.append({"prompt": ex[0], "answer": ex[1]})
    print(f"{len(train_pool)} training sentences, {len(held_pool)} held out", flush=True)
    config = transformers.Qwen2Config(
        vocab_size=len(tok), hidden_size=s["hidden"], intermediate_size=s["ffn"], num_hidden_layers=s["layers"],
        num_attention_heads=s["heads"], num_key_value_heads=s["kv_heads"], max_position_embeddings=512,
        rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=True, bos_token_id=eos, eos_token_id=eos,
        pad_token_id=eos)
    model = transformers.Qwen2ForCausalLM(config)
    if args.init:  # the lr schedule starts over; build_info records what it continued
        model.load_state_dict(transformers.Qwen2ForCausalLM.from_pretrained(args.init).state_dict())
        earlier = json.loads((Path(args.init) / "build_info.json").read_text())
    opt = torch.optim.AdamW(model.parameters(), lr=s["lr"], weight_decay=0.1)
    model.train()
    t0, c0, step, losses, best = time.time(), time.process_time(), 0, [], (float("inf"), None, 0, 0.0)
    budget = args.minutes * 60
    while time.process_time() - c0 < budget:  # CPU time: a shared machine slows, not shortens, training
        lr = s["lr"] * min(1.0, (step + 1) / s["warmup"]) * max(0.05, 1 - (time.process_time() - c0) / budget)
        for group in opt.param_groups:
            group["lr"] = lr
        x, w, mask = make_batch(tok, train_pool, rng, eos)
        logits = model(input_ids=x, attention_mask=mask).logits[:, :-1]
        ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), x[:, 1:], reduction="none")
        loss = (ce * w[:, 1:]).sum() / w[:, 1:].sum()
        optimizer_step(opt, model, loss)
        losses.append(float((ce * (w[:, 1:] == 1)).sum() / (w[:, 1:] == 1).sum()))
        step += 1
        if step % 200 == 0:
            h, exact = answer_loss(model, tok, held)
            if h < best[0]:
                best = (h, {k: v.detach().clone() for k, v in model.state_dict().items()}, step, exact)
            print(f"step {step} answer ce {sum(losses[-100:]) / 100:.3f} held-out {h:.3f} exact {exact:.2f} "
                  f"({time.time() - t0:.0f}s)", flush=True)
    if best[1] is not None:
        model.load_state_dict(best[1])
    model.eval()
    h, exact = answer_loss(model, tok, held)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for f in out.iterdir():
        f.unlink()
    model.generation_config = transformers.GenerationConfig(bos_token_id=eos, eos_token_id=eos, pad_token_id=eos,
                                                            do_sample=False)
    model.save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(TOKENIZER / name, out / name)
    (out / "held_out.jsonl").write_text("".join(json.dumps(e) + "\n" for e in held), encoding="utf-8")
    info = {"source": f"sentences of {LICENSES} and of the docstrings of {sysconfig.get_paths()['stdlib']}/*.py "
                      f"(held out: {', '.join(HELD_OUT_MODULES)}), paragraphs drawn at random",
            "train_sentences": len(train_pool), "held_out_sentences": len(held_pool), "steps": step,
            "best_step": best[2], "final_train_answer_ce": round(sum(losses[-100:]) / max(1, len(losses[-100:])), 4),
            "held_out_answer_ce": round(h, 4), "held_out_greedy_exact": round(exact, 4),
            "seconds": round(time.time() - t0), "cpu_seconds": round(time.process_time() - c0)}
    if args.init:
        info["continued_from"] = {k: earlier[k] for k in ("steps", "cpu_seconds", "held_out_answer_ce", "spec_fingerprint")}
    print(json.dumps(write_build_info(out, SPEC, info), indent=1))


if __name__ == "__main__":
    main()
