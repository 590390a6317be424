#!/usr/bin/env python3
"""What each quantization scheme costs in quality, on a model that has learned something:
the committed tests/fixtures/data/quality-lm (bench/quality/train_quality_lm.py: a small
Qwen2 trained on English prose) imported at every scheme, measured on its held-out text
(held_out.txt, never trained on) against the f32 import:

- teacher-forced agreement: the fraction of positions whose next-token argmax equals the
  f32 program's (forward logits over CONTEXT-token windows of the held-out text);
- delta log-likelihood: the change of the mean log-likelihood per token of the held-out
  text (nats; negative: the scheme predicts the text worse);
- greedy continuations: prompts from the held-out text continued greedily by each
  program; the mean fraction of new tokens identical to f32's before the first difference;
- the program's weights.safetensors size.

    python bench/quantization_quality.py                     # every scheme, the table on stdout
    python bench/quantization_quality.py --windows 4 --prompts 4 --json out.json   # a quick run

The table in docs/quantization.md comes from this script (the CPU named there).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "tests" / "fixtures" / "data" / "quality-lm"
# (label, scheme, import_hf options): int4 at three group sizes; the tied embedding/output
# matrix at the 4-bit schemes' default (int8), int4 or f32 (what quantizing it costs)
TABLE = "model.embed_tokens.weight"
SCHEMES = [("f32", None, {}), ("f16", "f16", {}), ("bf16", "bf16", {}), ("int8", "int8", {}), ("w8a8", "w8a8", {}),
           ("int4 G=32", "int4", {"group_size": 32}), ("int4 G=64", "int4", {"group_size": 64}),
           ("int4 G=128", "int4", {"group_size": 128}), ("w4a8 G=32", "w4a8", {"group_size": 32}),
           ("int4 G=32, table int4", "int4", {"group_size": 32, "tables": "int4"}),
           ("w4a8 G=32, table int4", "w4a8", {"group_size": 32, "tables": "w4a8"}),
           ("int4 G=32, table f32", "int4", {"group_size": 32, "keep_f32": [TABLE]}),
           ("int8, table f32", "int8", {"keep_f32": [TABLE]})]


def held_out_ids(model: Path, context: int, windows: int) -> np.ndarray:
    """[windows, context] token ids of the held-out text, consecutive windows."""
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(model)
    ids = tok((model / "held_out.txt").read_text(encoding="utf-8"))["input_ids"]
    n = min(windows, len(ids) // context)
    return np.asarray(ids[:n * context], np.int64).reshape(n, context)


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def forward(prog, ids: np.ndarray, batch: int = 4) -> np.ndarray:
    return np.concatenate([prog.run("forward", ids[i:i + batch], np.ones_like(ids[i:i + batch]))
                           for i in range(0, len(ids), batch)])


def measure(prog, ids, prompts, new_tokens, ref=None) -> dict:
    logits = forward(prog, ids)
    lp = log_softmax(logits[:, :-1])
    ll = float(np.take_along_axis(lp, ids[:, 1:, None], -1).mean())
    argmax = logits[:, :-1].argmax(-1)
    cont = prog.generate(prompts, max_new_tokens=new_tokens, num_beams=1, do_sample=False)[:, prompts.shape[1]:]
    row = {"ll": ll, "argmax": argmax, "cont": cont, "bytes": (Path(prog.path) / "weights.safetensors").stat().st_size}
    if ref is not None:
        row["agree"] = float((argmax == ref["argmax"]).mean())
        row["dll"] = ll - ref["ll"]
        same = cont == ref["cont"][:, :cont.shape[1]]
        prefix = np.where(same.all(1), same.shape[1], (~same).argmax(1))
        row["greedy"] = float(prefix.mean() / new_tokens)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, default=MODEL)
    ap.add_argument("--context", type=int, default=128, help="tokens per teacher-forced window")
    ap.add_argument("--windows", type=int, default=64, help="held-out windows (at most the text's)")
    ap.add_argument("--prompts", type=int, default=16, help="greedy continuations")
    ap.add_argument("--prompt-tokens", type=int, default=16)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--only", nargs="*", help="labels to run (default: every scheme this build has)")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args(argv)

    import tensorvm
    from tensorvm.pycompiler.schemes import SCHEMES as BUILT

    ids = held_out_ids(args.model, args.context, args.windows)
    prompts = ids[:args.prompts, :args.prompt_tokens]
    rows, ref = [], None
    with tempfile.TemporaryDirectory() as tmp:
        for label, scheme, options in SCHEMES:
            if args.only and label not in args.only and label != "f32":
                continue
            if scheme is not None and scheme not in BUILT:
                print(f"{label}: not in this build", file=sys.stderr)
                continue
            t0 = time.time()
            out = Path(tmp) / f"{''.join(c for c in label if c.isalnum())}.tvm"
            tensorvm.import_hf(args.model, out, quantize=scheme, tokenizer=False, **options)
            row = measure(tensorvm.load(out), ids, prompts, args.new_tokens, ref)
            ref = ref or row
            rows.append({"scheme": label, "mib": row["bytes"] / 2**20, "ll": row["ll"],
                         **{k: row[k] for k in ("agree", "dll", "greedy") if k in row}})
            print(f"{label}: {time.time() - t0:.0f}s", file=sys.stderr)
    print(f"{len(ids)} held-out windows of {args.context} tokens, {len(prompts)} greedy continuations of "
          f"{args.new_tokens} tokens after {args.prompt_tokens}; f32 mean log-likelihood {rows[0]['ll']:.4f} nats/token\n")
    print("| scheme | weights MiB | next-token argmax = f32 | delta log-likelihood / token | greedy tokens = f32 |")
    print("|---|---|---|---|---|")
    for r in rows:
        if "agree" not in r:
            print(f"| {r['scheme']} | {r['mib']:.2f} | (reference) | 0 | (reference) |")
        else:
            print(f"| {r['scheme']} | {r['mib']:.2f} | {100 * r['agree']:.2f}% | {r['dll']:+.4f} | "
                  f"{100 * r['greedy']:.1f}% |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
