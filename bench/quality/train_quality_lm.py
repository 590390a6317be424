#!/usr/bin/env python3
"""Trains the committed small English language model tests/fixtures/data/quality-lm, the
model docs/quantization.md's quality table is measured on (bench/quantization_quality.py).

Random weights cannot show quantization error (every logit is noise), so the table needs
a model that has learned something. This is a Qwen2ForCausalLM (tied embeddings, grouped-
query attention, q/k/v biases: the shape of Qwen2.5) trained for a few CPU minutes on
real English prose available offline: the licence texts in /usr/share/common-licenses
(Debian) and the docstrings of Python's standard library (the top-level modules of the
running Python, docstrings of 200 characters or more). Two licences and five modules
are held out (HELD_OUT, HELD_OUT_MODULES) and never trained on: the quality script
measures on them. The tokenizer is a byte-level BPE trained on the
training texts. Training stops early when the held-out loss has not improved for 500
steps and keeps the best weights. It is not reproducible across machines (the stdlib's
docstrings depend on the Python version, the float rounding on the CPU or GPU), so the
result is committed with the held-out text it was measured on (held_out.txt) and
build_info.json (the committed one: 13 s on a GPU, Python 3.12's stdlib, best at step 400):

    python bench/quality/train_quality_lm.py [--minutes 6] [--device cuda]   # writes tests/fixtures/data/quality-lm
    python bench/quality/train_quality_lm.py --dump-corpus corpus.json       # this machine's texts, for --corpus elsewhere
"""
from __future__ import annotations

import argparse
import ast
import json
import platform
import sysconfig
import time
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

LICENSES = Path("/usr/share/common-licenses")
HELD_OUT = ("Apache-2.0", "MPL-2.0")  # never trained on: the quality script's held-out text
HELD_OUT_MODULES = ("argparse", "pathlib", "subprocess", "typing", "zipfile")
OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "data" / "quality-lm"
VOCAB, CONTEXT, BATCH = 1024, 128, 32


def docstrings(module: Path, min_chars: int = 200) -> list[str]:
    try:
        tree = ast.parse(module.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return []
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docs = (ast.get_docstring(n) for n in ast.walk(tree) if isinstance(n, kinds))
    return [d for d in docs if d and len(d) >= max(1, min_chars)]


def texts(held_out: bool) -> list[str]:
    """The licence texts (real files only: GPL -> GPL-3 links would repeat them) and the
    standard library's docstrings, the held-out ones or the others."""
    files = sorted(p for p in LICENSES.iterdir() if p.is_file() and not p.is_symlink())
    out = [p.read_text(encoding="utf-8", errors="replace") for p in files if (p.name in HELD_OUT) == held_out]
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for module in sorted(stdlib.glob("*.py")):
        if (module.stem in HELD_OUT_MODULES) == held_out:
            out.extend(docstrings(module))
    return out


def train_tokenizer(corpus: list[str], vocab: int = VOCAB) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    return tok


def held_out_loss(model, held, device) -> float:
    """Mean next-token loss over the held-out text in CONTEXT-token windows."""
    n = len(held) // CONTEXT
    x = torch.tensor(held[:n * CONTEXT], device=device).reshape(n, CONTEXT)
    model.eval()
    with torch.no_grad():
        loss = sum(float(model(input_ids=x[i:i + 16], labels=x[i:i + 16]).loss) * len(x[i:i + 16])
                   for i in range(0, n, 16)) / n
    model.train()
    return loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=6.0, help="training time budget")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--corpus", help="a JSON {train: [...], held_out: [...]} to read instead of this machine's "
                                         "texts (written with --dump-corpus)")
    parser.add_argument("--dump-corpus", help="write this machine's texts to this JSON file and stop")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    if args.dump_corpus:
        Path(args.dump_corpus).write_text(json.dumps({"train": texts(False), "held_out": texts(True)}))
        return
    corpus = json.loads(Path(args.corpus).read_text()) if args.corpus else {"train": texts(False),
                                                                            "held_out": texts(True)}
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    train = corpus["train"]
    tok = train_tokenizer(train)
    eos = tok.token_to_id("<|endoftext|>")
    ids = torch.tensor([i for t in train for i in tok.encode(t).ids + [eos]])
    held = [i for t in corpus["held_out"] for i in tok.encode(t).ids + [eos]]
    config = transformers.Qwen2Config(
        vocab_size=VOCAB, hidden_size=192, intermediate_size=512, num_hidden_layers=3, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=512, rms_norm_eps=1e-6, rope_theta=10000.0,
        tie_word_embeddings=True, bos_token_id=eos, eos_token_id=eos, pad_token_id=eos)
    model = transformers.Qwen2ForCausalLM(config).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.1)
    g = torch.Generator().manual_seed(1)
    t0, step, losses, best = time.time(), 0, [], (float("inf"), None, 0)
    budget = args.minutes * 60
    # Early stopping on the held-out loss: the corpus is small and the model would memorize it
    while time.time() - t0 < budget:
        lr = 2e-3 * min(1.0, (step + 1) / 100) * max(0.05, 1 - (time.time() - t0) / budget)
        for group in opt.param_groups:
            group["lr"] = lr
        start = torch.randint(0, len(ids) - CONTEXT - 1, (BATCH,), generator=g)
        batch = torch.stack([ids[s:s + CONTEXT] for s in start.tolist()]).to(dev)
        loss = model(input_ids=batch, labels=batch).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        step += 1
        if step % 100 == 0:
            h = held_out_loss(model, held, dev)
            if h < best[0]:
                best = (h, {k: v.detach().clone() for k, v in model.state_dict().items()}, step)
            print(f"step {step} train {sum(losses[-100:]) / 100:.3f} held-out {h:.3f} ({time.time() - t0:.0f}s)",
                  flush=True)
            if step - best[2] >= 500:
                break
    if best[1] is not None:
        model.load_state_dict(best[1])
    model = model.to("cpu").eval()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                                                bos_token="<|endoftext|>", pad_token="<|endoftext|>")
    fast.save_pretrained(out)
    (out / "held_out.txt").write_text("\n\n".join(corpus["held_out"]), encoding="utf-8")
    info = {"source": f"{LICENSES} and the docstrings of {sysconfig.get_paths()['stdlib']}/*.py "
                      f"(held out, in held_out.txt: {', '.join(HELD_OUT + HELD_OUT_MODULES)})", "steps": step,
            "best_step": best[2], "batch": BATCH, "context": CONTEXT, "train_tokens": len(ids),
            "held_out_tokens": len(held), "final_train_loss": sum(losses[-100:]) / max(1, len(losses[-100:])),
            "held_out_loss": held_out_loss(model, held, "cpu"), "device": str(dev),
            "cpu": platform.processor() or platform.machine(),
            "python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
            "seconds": round(time.time() - t0)}
    (out / "build_info.json").write_text(json.dumps(info, indent=1) + "\n")
    print(json.dumps(info, indent=1))


if __name__ == "__main__":
    main()
