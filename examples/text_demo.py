"""Text in, text out: a tiny Marian that really translates, trained here in about a minute.

    python examples/text_demo.py [--out DIR] [--seconds 60]

Makes a toy English-to-French corpus of number words ("I have twenty-one cats." ->
"J'ai vingt et un chats."), trains sentencepiece models on it and a small Marian
(transformers' MarianMTModel) for about --seconds, saves the checkpoint with its
MarianTokenizer files, imports it (the tokenizer goes into the program directory), then
translates unseen-order sentences with `tensorvm-run PROGRAM translate`: C++ only, text
in and text out. A model trained this briefly still makes mistakes (on a busy machine,
give it more --seconds); random weights would only print gibberish.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

EN_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
            "sixteen seventeen eighteen nineteen").split()
EN_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
FR_UNITS = ("zéro un deux trois quatre cinq six sept huit neuf dix onze douze treize quatorze quinze seize "
            "dix-sept dix-huit dix-neuf").split()
FR_TENS = "_ _ vingt trente quarante cinquante soixante".split()
NOUNS = [("cat", "cats", "chat", "chats"), ("dog", "dogs", "chien", "chiens"), ("book", "books", "livre", "livres"),
         ("friend", "friends", "ami", "amis"), ("apple", "apples", "pomme", "pommes")]
TEMPLATES = [("I have {n} {noun}.", "J'ai {n} {noun}."), ("We see {n} {noun}.", "Nous voyons {n} {noun}."),
             ("There are {n} {noun}.", "Il y a {n} {noun}.")]


def english(n: int) -> str:
    if n < 20:
        return EN_UNITS[n]
    tens, unit = divmod(n, 10)
    return EN_TENS[tens] + (f"-{EN_UNITS[unit]}" if unit else "")


def french(n: int) -> str:
    if n < 20:
        return FR_UNITS[n]
    tens, unit = divmod(n, 10)
    if tens in (7, 9):  # soixante-dix, quatre-vingt-dix: 60/80 plus 10..19
        base = "soixante" if tens == 7 else "quatre-vingt"
        rest = 10 + unit
        return f"{base} et onze" if (tens == 7 and unit == 1) else f"{base}-{FR_UNITS[rest]}"
    if tens == 8:
        return "quatre-vingts" if unit == 0 else f"quatre-vingt-{FR_UNITS[unit]}"
    if unit == 0:
        return FR_TENS[tens]
    return f"{FR_TENS[tens]} et un" if unit == 1 else f"{FR_TENS[tens]}-{FR_UNITS[unit]}"


def pair(rnd: random.Random) -> tuple[str, str]:
    n = rnd.randrange(2, 100)
    en_t, fr_t = rnd.choice(TEMPLATES)
    _, en_pl, _, fr_pl = rnd.choice(NOUNS)
    return en_t.format(n=english(n), noun=en_pl), fr_t.format(n=french(n), noun=fr_pl)


def make_tokenizer(work: Path, lines: list[str]) -> Path:
    """source.spm = target.spm (one shared model) and vocab.json in Marian's layout."""
    import sentencepiece as spm
    from transformers import MarianTokenizer

    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=str(work / "spm"), vocab_size=160,
                                   hard_vocab_limit=False,
                                   character_coverage=1.0, num_threads=1, minloglevel=2, bos_id=-1, eos_id=0,
                                   unk_id=1, pad_id=-1)
    sp = spm.SentencePieceProcessor(model_file=str(work / "spm.model"))
    vocab = {"</s>": 0, "<unk>": 1}
    for i in range(sp.get_piece_size()):
        if not (sp.is_control(i) or sp.is_unknown(i)):
            vocab.setdefault(sp.id_to_piece(i), len(vocab))
    vocab["<pad>"] = len(vocab)
    (work / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    tok = MarianTokenizer(str(work / "spm.model"), str(work / "spm.model"), str(work / "vocab.json"))
    tok.save_pretrained(work / "ckpt")
    return work / "ckpt"


def train(ckpt: Path, seconds: float, seed: int) -> None:
    import torch
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    torch.manual_seed(seed)
    tok = MarianTokenizer.from_pretrained(ckpt)
    pad = tok.pad_token_id
    config = MarianConfig(vocab_size=len(tok.encoder), d_model=64, encoder_layers=1, decoder_layers=1,
                          encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                          decoder_ffn_dim=128, max_position_embeddings=64, pad_token_id=pad, eos_token_id=0,
                          decoder_start_token_id=pad, forced_eos_token_id=0, dropout=0.0, max_length=32,
                          num_beams=1, bad_words_ids=[[pad]])
    model = MarianMTModel(config)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rnd = random.Random(seed)
    # Encoded once (the tokenizer is Python): training then samples batches of ids.
    pairs = sorted({pair(rnd) for _ in range(20000)})
    enc = tok([p[0] for p in pairs], text_target=[p[1] for p in pairs])
    data = list(zip(enc["input_ids"], enc["labels"]))

    def pad_to(rows, value):
        width = max(len(r) for r in rows)
        return torch.tensor([r + [value] * (width - len(r)) for r in rows])

    t0, step = time.perf_counter(), 0
    model.train()
    while time.perf_counter() - t0 < seconds:
        batch = rnd.sample(data, 32)
        src = pad_to([b[0] for b in batch], pad)
        loss = model(input_ids=src, attention_mask=(src != pad).long(),
                     labels=pad_to([b[1] for b in batch], -100)).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 100 == 0:
            print(f"   step {step}: loss {loss.item():.3f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"   {step} steps, last loss {loss.item():.3f}")
    model.eval()
    model.save_pretrained(ckpt)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="text_demo", help="working directory (checkpoint, program)")
    ap.add_argument("--seconds", type=float, default=60.0, help="training time")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import torch

    import tensorvm
    from tensorvm.pycompiler.import_hf import import_hf
    from tensorvm.pycompiler.locations import get_tensorvm_run

    torch.set_num_threads(2)
    work = Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(args.seed)
    corpus = [s for _ in range(3000) for s in pair(rnd)]
    print("== tokenizer: sentencepiece trained on the toy corpus")
    ckpt = make_tokenizer(work, corpus)
    print(f"== training a small Marian for {args.seconds:.0f} s")
    train(ckpt, args.seconds, args.seed)
    print("== import-hf (the tokenizer goes into the program directory)")
    prog = import_hf(ckpt, work / "numbers.tvm")
    print(f"   {prog}: tokenizer {tensorvm.load(prog).meta['tokenizer']['kind']}")
    sentences = ["I have twenty-one cats.", "We see seventy-three dogs.", "There are ninety-nine books.",
                 "I have forty-four apples."]
    (work / "in.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    print("== tensorvm-run numbers.tvm translate --text-file in.txt  (C++ only: text in, text out)")
    res = subprocess.run([get_tensorvm_run(), str(prog), "translate", "--text-file", str(work / "in.txt")],
                         capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(res.stderr)
    outputs = res.stdout.splitlines()
    for src, out in zip(sentences, outputs):
        want = pair_for(src)
        print(f"   {src}  ->  {out}" + ("" if out == want else f"   (expected: {want})"))
    return sentences, outputs, prog


def pair_for(english_sentence: str) -> str:
    """The corpus's French for one of its English sentences (for the demo's printout)."""
    for n in range(100):
        for (en_t, fr_t) in TEMPLATES:
            for (_, en_pl, _, fr_pl) in NOUNS:
                if en_t.format(n=english(n), noun=en_pl) == english_sentence:
                    return fr_t.format(n=french(n), noun=fr_pl)
    return "?"


if __name__ == "__main__":
    main()
