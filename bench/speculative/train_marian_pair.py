#!/usr/bin/env python3
"""Trains the committed English -> French Marian pair for speculative decoding:
tests/fixtures/data/spec-marian-target (6 encoder + 6 decoder layers) and
tests/fixtures/data/spec-marian-draft (2 encoder + 1 decoder layers, the same
vocabulary and d_model), on real parallel text available offline: the French message
catalogs of the installed packages (gettext_corpus.py).

Acceptance of a draft depends on what the two models learned, so they must have learned
something: the target trains on the pairs for a few CPU minutes; the draft then trains
on the same pairs against the target's own next-token distribution (distillation, plus
a little of the reference), which is what a draft is for: guessing the target's argmax.
The catalogs of HELD_OUT are never trained on (pairs whose English also appears
elsewhere are dropped from them); up to HELD_OUT_PAIRS of them are committed beside the
target (held_out.tsv: English <TAB> French) for the benchmark and the tests.

The tokenizer is one sentencepiece unigram model (VOCAB pieces, </s> = 0, <unk> = 1, as
Marian's) trained on both sides, saved as transformers' MarianTokenizer does (source.spm
= target.spm, vocab.json with <pad> last); both models carry it.

Not reproducible across machines (the installed catalogs, the CPU's rounding), so the
result is committed with build_info.json (spec fingerprint, SHA-256 of every file, CPU,
versions, losses); tests check the hashes and never train:

    python bench/speculative/train_marian_pair.py [--minutes 6 --draft-minutes 3]   # CPU minutes
    python bench/speculative/train_marian_pair.py --dump-corpus pairs.json   # for --corpus elsewhere
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_info import optimizer_step, write_build_info  # noqa: E402
from gettext_corpus import catalog_pairs  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "data"
TARGET, DRAFT = "spec-marian-target", "spec-marian-draft"
HELD_OUT = ("sed", "grep", "xz", "diffutils")
SKIPPED = ("iso_",)  # ISO code lists: names, mostly copied unchanged; not sentences
HELD_OUT_PAIRS = 200
VOCAB = 2000
MAX_TOKENS = 48
# The spec: what build_info.json's fingerprint covers (a change means: retrain, recommit)
SPEC = {
    "vocab": VOCAB, "max_tokens": MAX_TOKENS, "held_out": HELD_OUT, "skipped": SKIPPED,
    "target": {"d_model": 64, "encoder_layers": 6, "decoder_layers": 6, "heads": 4, "ffn": 256},
    "draft": {"d_model": 64, "encoder_layers": 2, "decoder_layers": 1, "heads": 4, "ffn": 256},
    "batch": 48, "lr": 1.5e-3, "warmup": 100, "label_smoothing": 0.1, "distill_weight": 0.8, "seed": 0,
}


def split_corpus() -> dict:
    """{"train": [[en, fr], ...], "held_out": [[en, fr], ...]} from this machine's catalogs."""
    cats = {k: v for k, v in catalog_pairs("fr").items() if not k.startswith(SKIPPED)}
    train, seen = [], set()
    for name, pairs in cats.items():
        if name not in HELD_OUT:
            for en, fr in pairs:
                if en not in seen:
                    seen.add(en)
                    train.append([en, fr])
    held, hseen = [], set()
    for name in HELD_OUT:
        for en, fr in cats.get(name, []):
            if en not in seen and en not in hseen:
                hseen.add(en)
                held.append([en, fr])
    return {"train": train, "held_out": held}


def train_tokenizer(texts: list[str], work: Path) -> transformers.MarianTokenizer:
    import sentencepiece as spm

    (work / "text.txt").write_text("\n".join(texts), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(work / "text.txt"), model_prefix=str(work / "spm"), vocab_size=VOCAB - 1, model_type="unigram",
        eos_id=0, unk_id=1, bos_id=-1, pad_id=-1, character_coverage=0.9995, seed_sentencepiece_size=50000,
        num_threads=1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(work / "spm.model"))
    # Marian's layout: </s> <unk>, the pieces in the model's order, <pad> last
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not (sp.is_control(i) or sp.is_unknown(i))]
    vocab = {piece: i for i, piece in enumerate(["</s>", "<unk>", *dict.fromkeys(pieces), "<pad>"])}
    (work / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    return transformers.MarianTokenizer(str(work / "spm.model"), str(work / "spm.model"), str(work / "vocab.json"),
                                        source_lang="en", target_lang="fr")


def encode(tok, pairs: list) -> list[tuple[list[int], list[int]]]:
    src = tok([p[0] for p in pairs])["input_ids"]
    tgt = tok(text_target=[p[1] for p in pairs])["input_ids"]
    return [(s, t) for s, t in zip(src, tgt) if len(s) <= MAX_TOKENS and len(t) <= MAX_TOKENS]


def make_model(shape: dict, vocab: int, pad: int) -> transformers.MarianMTModel:
    config = transformers.MarianConfig(
        vocab_size=vocab, decoder_vocab_size=vocab, d_model=shape["d_model"], encoder_layers=shape["encoder_layers"],
        decoder_layers=shape["decoder_layers"], encoder_attention_heads=shape["heads"],
        decoder_attention_heads=shape["heads"], encoder_ffn_dim=shape["ffn"], decoder_ffn_dim=shape["ffn"],
        max_position_embeddings=128, activation_function="swish", dropout=0.1, attention_dropout=0.0,
        activation_dropout=0.0, scale_embedding=True, pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0,
        bos_token_id=0, forced_eos_token_id=0, share_encoder_decoder_embeddings=True, tie_word_embeddings=True)
    return transformers.MarianMTModel(config)


def batch_of(data, idx, pad):
    """Padded source, mask, decoder input (pad-started) and labels (-100 where padded)."""
    b = [data[i] for i in idx]
    ls, lt = max(len(s) for s, _ in b), max(len(t) for _, t in b)
    src = torch.full((len(b), ls), pad)
    lab = torch.full((len(b), lt), -100)
    for i, (s, t) in enumerate(b):
        src[i, :len(s)] = torch.tensor(s)
        lab[i, :len(t)] = torch.tensor(t)
    dec = torch.full_like(lab, pad)
    dec[:, 1:] = lab[:, :-1].masked_fill(lab[:, :-1] == -100, pad)
    return src, (src != pad).long(), dec, lab


def held_out_loss(model, data, pad) -> float:
    model.eval()
    total, n = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(data), 64):
            src, mask, dec, lab = batch_of(data, range(i, min(i + 64, len(data))), pad)
            logits = model(input_ids=src, attention_mask=mask, decoder_input_ids=dec).logits
            loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), lab, ignore_index=-100, reduction="sum")
            total, n = total + float(loss), n + int((lab != -100).sum())
    model.train()
    return total / n


def train(model, data, held, pad, minutes: float, teacher=None, log="") -> dict:
    """AdamW, warmup then linear decay over the time budget; with a teacher, the loss is
    distill_weight * KL(teacher || model) + the rest * cross-entropy on the reference.
    Keeps the weights of the best held-out loss (checked every 100 steps)."""
    s = SPEC
    g = torch.Generator().manual_seed(s["seed"])
    opt = torch.optim.AdamW(model.parameters(), lr=s["lr"], weight_decay=0.01, betas=(0.9, 0.98))
    model.train()
    t0, c0, step, losses, best = time.time(), time.process_time(), 0, [], (float("inf"), None, 0)
    budget = minutes * 60
    while time.process_time() - c0 < budget:  # CPU time: a shared machine slows, not shortens, training
        lr = s["lr"] * min(1.0, (step + 1) / s["warmup"]) * max(0.05, 1 - (time.process_time() - c0) / budget)
        for group in opt.param_groups:
            group["lr"] = lr
        idx = torch.randint(0, len(data), (s["batch"],), generator=g).tolist()
        src, mask, dec, lab = batch_of(data, idx, pad)
        logits = model(input_ids=src, attention_mask=mask, decoder_input_ids=dec).logits
        ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), lab, ignore_index=-100,
                                               label_smoothing=s["label_smoothing"])
        loss = ce
        if teacher is not None:
            with torch.no_grad():
                t_logits = teacher(input_ids=src, attention_mask=mask, decoder_input_ids=dec).logits
            keep = lab != -100
            kl = torch.nn.functional.kl_div(torch.log_softmax(logits[keep], -1), torch.log_softmax(t_logits[keep], -1),
                                            log_target=True, reduction="batchmean")
            loss = s["distill_weight"] * kl + (1 - s["distill_weight"]) * ce
        optimizer_step(opt, model, loss)
        losses.append(float(ce.detach()))
        step += 1
        if step % 100 == 0:
            h = held_out_loss(model, held, pad)
            if h < best[0]:
                best = (h, {k: v.detach().clone() for k, v in model.state_dict().items()}, step)
            print(f"{log} step {step} train ce {sum(losses[-100:]) / 100:.3f} held-out {h:.3f} "
                  f"({time.time() - t0:.0f}s)", flush=True)
    if best[1] is not None:
        model.load_state_dict(best[1])
    model.eval()
    return {"steps": step, "best_step": best[2], "final_train_ce": round(sum(losses[-100:]) / max(1, len(losses[-100:])), 4),
            "held_out_ce": round(held_out_loss(model, held, pad), 4), "seconds": round(time.time() - t0), "cpu_seconds": round(time.process_time() - c0)}


def agreement(target, draft, data, pad) -> float:
    """Teacher-forced next-token argmax agreement of draft with target on `data`."""
    same = n = 0
    with torch.no_grad():
        for i in range(0, len(data), 64):
            src, mask, dec, lab = batch_of(data, range(i, min(i + 64, len(data))), pad)
            a = target(input_ids=src, attention_mask=mask, decoder_input_ids=dec).logits.argmax(-1)
            b = draft(input_ids=src, attention_mask=mask, decoder_input_ids=dec).logits.argmax(-1)
            keep = lab != -100
            same, n = same + int((a == b)[keep].sum()), n + int(keep.sum())
    return same / n


def save(model, tok, out: Path, extra_files: dict, info: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for f in out.iterdir():
        f.unlink()
    model.generation_config = transformers.GenerationConfig(
        bos_token_id=0, decoder_start_token_id=model.config.pad_token_id, eos_token_id=0, forced_eos_token_id=0,
        pad_token_id=model.config.pad_token_id, bad_words_ids=[[model.config.pad_token_id]], max_length=64,
        num_beams=1, renormalize_logits=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    for name, text in extra_files.items():
        (out / name).write_text(text, encoding="utf-8")
    write_build_info(out, SPEC, info)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=6.0, help="the target's training time (CPU minutes)")
    ap.add_argument("--draft-minutes", type=float, default=3.0, help="(CPU minutes)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--corpus", help="a JSON {train, held_out} written by --dump-corpus, instead of this machine's")
    ap.add_argument("--dump-corpus", help="write this machine's pairs to this JSON file and stop")
    ap.add_argument("--out", default=str(DATA))
    args = ap.parse_args()
    corpus = json.loads(Path(args.corpus).read_text()) if args.corpus else split_corpus()
    if args.dump_corpus:
        Path(args.dump_corpus).write_text(json.dumps(corpus, ensure_ascii=False))
        return
    torch.manual_seed(SPEC["seed"])
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        tok = train_tokenizer([t for p in corpus["train"] for t in p], Path(tmp))
        tok.save_pretrained(Path(tmp) / "tok")
        tok = transformers.MarianTokenizer.from_pretrained(Path(tmp) / "tok")
    pad = tok.pad_token_id
    data = encode(tok, corpus["train"])
    held_pairs = corpus["held_out"][:HELD_OUT_PAIRS]
    held = encode(tok, held_pairs)
    print(f"{len(data)} training pairs, {len(held)} held out, vocab {len(tok)}", flush=True)
    common = {"source": "French message catalogs (/usr/share/locale/fr/LC_MESSAGES/*.mo) of the installed "
                        f"packages except {', '.join(s + '*' for s in SKIPPED)}; held out: {', '.join(HELD_OUT)}",
              "train_pairs": len(data), "held_out_pairs": len(held),
              "uniform_ce": round(math.log(len(tok)), 4)}
    target = make_model(SPEC["target"], len(tok), pad)
    t_info = train(target, data, held, pad, args.minutes, log="target")
    draft = make_model(SPEC["draft"], len(tok), pad)
    d_info = train(draft, data, held, pad, args.draft_minutes, teacher=target, log="draft")
    d_info["argmax_agreement_with_target_held_out"] = round(agreement(target, draft, held, pad), 4)
    print("target", t_info, "\ndraft", d_info, flush=True)
    tsv = "".join(f"{en}\t{fr}\n" for en, fr in held_pairs)
    save(target, tok, Path(args.out) / TARGET, {"held_out.tsv": tsv},
         {**common, "model": "target", "shape": SPEC["target"], **t_info})
    save(draft, tok, Path(args.out) / DRAFT, {},
         {**common, "model": "draft (distilled from the target)", "shape": SPEC["draft"], **d_info})


if __name__ == "__main__":
    main()
