"""Speculative and prompt-lookup decoding (issue 31) at batch 1: tokens/s of plain greedy
against prompt lookup, a draft model and self-speculation, with the acceptance rate, for
tensorvm and, side by side, transformers' own generate(assistant_model=...) and
generate(prompt_lookup_num_tokens=...), on models that have learned something (the
committed fixtures, trained by bench/speculative/):

* translation: tests/fixtures/data/spec-marian-target (Marian, 6+6 layers, English ->
  French on gettext catalogs) with spec-marian-draft (2+1 layers, distilled from it) on
  the held-out catalog strings (held_out.tsv);
* extraction: tests/fixtures/data/spec-copy-bart (BART, 2+2 layers), which writes a
  passage's lead sentence (random real words: the output is a span of the source), on its
  held-out passages (held_out.jsonl). tensorvm's prompt lookup searches the source too
  (prompt_lookup_source=True); transformers' searches the decoder row only (its rule).

    python3 bench/speculative_bench.py --threads 2 --out results.json --md results.md
    python3 bench/speculative_bench.py --quick --strict       # smoke run: two inputs, seconds

Rows, per task: each engine's plain greedy, then each method. tokens/s is the new tokens
of every input, generated one input at a time, over the median (of --reps, the methods
in turn) of the time for all inputs; "vs greedy" divides by the same engine's plain
greedy. acceptance: accepted draft tokens / proposed draft tokens (transformers: counted
from its candidate generators and a forward hook; tensorvm, which reports no statistics:
by replaying its rounds on its exact output with the same proposer, see `replay`);
tokens/pass: new tokens per forward pass of the target (1.0 for greedy). Every
row's tokens must equal transformers' plain greedy (--strict exits 1 otherwise): greedy
speculation is exact by construction. A tensorvm method that this build does not have
is a row saying so (status "unavailable"), not a failure.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from bench.speculative.fixture_info import cpu_name  # noqa: E402
DATA = ROOT / "tests" / "fixtures" / "data"
MARIAN, DRAFT, COPY = DATA / "spec-marian-target", DATA / "spec-marian-draft", DATA / "spec-copy-bart"
LOOKUP_TOKENS = 10  # prompt_lookup_num_tokens (transformers' documented default choice)
NGRAM = 2  # max_matching_ngram_size (transformers' default)
DRAFT_TOKENS = 5  # num_assistant_tokens, fixed ("constant" schedule) so both engines propose alike
SELF_DRAFT = "int4"  # the scheme of self-speculation's draft


# --------------------------------------------------------------------------- inputs


def inputs(task: str, count: int) -> list[np.ndarray]:
    """Token ids of the held-out inputs, [1, n] each, from the fixture's own tokenizer."""
    import transformers

    if task == "translation":
        tok = transformers.AutoTokenizer.from_pretrained(MARIAN)
        lines = (MARIAN / "held_out.tsv").read_text(encoding="utf-8").splitlines()
        # the longer sentences first: speculation has little to win on two-word strings
        texts = sorted((l.split("\t")[0] for l in lines), key=lambda t: (-len(t), t))[:count]
    else:
        tok = transformers.AutoTokenizer.from_pretrained(COPY)
        rows = [json.loads(l) for l in (COPY / "held_out.jsonl").read_text(encoding="utf-8").splitlines()]
        texts = [r["source"] for r in rows[:count]]
    return [np.asarray([tok(t)["input_ids"]], np.int64) for t in texts]


# --------------------------------------------------------------------------- transformers


class Counts:
    """What one generate call did: target forward passes, draft tokens proposed and accepted."""

    def __init__(self):
        self.passes = self.proposed = 0


def hf_rows(task: str, new_tokens: int) -> dict:
    """{method: generate(ids) -> (new tokens, Counts)} for transformers."""
    import torch
    import transformers
    from transformers.generation import candidate_generator as cg

    transformers.logging.set_verbosity_error()  # its notes on the fixtures' generation_config are not results
    path = MARIAN if task == "translation" else COPY
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(path)
    model.eval()
    counts = Counts()
    model.register_forward_hook(lambda *_: setattr(counts, "passes", counts.passes + 1))
    for klass in (cg.AssistedCandidateGenerator, cg.PromptLookupCandidateGenerator):
        if not getattr(klass.get_candidates, "_counted", False):
            original = klass.get_candidates

            def counted(self, input_ids, *a, _original=original, **k):
                out = _original(self, input_ids, *a, **k)
                Counts.current.proposed += out[0].shape[-1] - input_ids.shape[-1]
                return out

            counted._counted = True
            klass.get_candidates = counted
    Counts.current = counts
    base = dict(max_new_tokens=new_tokens, do_sample=False, num_beams=1)
    methods = {"greedy": {}, "prompt lookup": dict(prompt_lookup_num_tokens=LOOKUP_TOKENS,
                                                   max_matching_ngram_size=NGRAM)}
    if task == "translation":
        draft = transformers.AutoModelForSeq2SeqLM.from_pretrained(DRAFT).eval()
        methods["draft"] = dict(assistant_model=draft)
        draft.generation_config.num_assistant_tokens = DRAFT_TOKENS
        draft.generation_config.num_assistant_tokens_schedule = "constant"
        draft.generation_config.assistant_confidence_threshold = 0.0

    def make(options):
        def generate(ids):
            counts.passes = counts.proposed = 0
            with torch.no_grad():
                out = model.generate(torch.from_numpy(ids), attention_mask=torch.ones_like(torch.from_numpy(ids)),
                                     **base, **options)
            new = out[0, (1 if model.config.is_encoder_decoder else ids.shape[1]):].numpy()
            c = Counts()
            c.passes, c.proposed = counts.passes, counts.proposed
            return new, c
        return generate

    return {name: make(options) for name, options in methods.items()}


# --------------------------------------------------------------------------- tensorvm


def tvm_rows(task: str, new_tokens: int, threads: int, work: Path) -> dict:
    """{method: (generate(ids) -> (new tokens, Counts), proposer or None)} or an
    "unavailable: why" string per method (a build without speculative decoding)."""
    import tensorvm

    path = MARIAN if task == "translation" else COPY
    target_dir = work / f"{task}.tvm"
    tensorvm.import_hf(path, target_dir, tokenizer=False)
    target = tensorvm.load(target_dir, num_threads=threads)
    rows = {"greedy": (_tvm_generate(target, new_tokens, {}), None)}
    lookup = dict(prompt_lookup_num_tokens=LOOKUP_TOKENS, max_matching_ngram_size=NGRAM)
    if task == "extraction":  # the copied span is in the source, which transformers' rule does not search
        lookup["prompt_lookup_source"] = True
    rows["prompt lookup"] = _tvm_method(target, new_tokens, lookup,
                                        _source_lookup_proposer if task == "extraction" else _lookup_proposer)
    speculate = dict(use_draft=True, num_assistant_tokens=DRAFT_TOKENS, num_assistant_tokens_schedule="constant")
    if task == "translation":
        rows["draft"] = _tvm_imported(tensorvm, path, work / "with-draft.tvm", dict(draft_model=DRAFT), new_tokens,
                                      threads, speculate, _draft_proposer(tensorvm, DRAFT, {}, work / "d.tvm"))
    rows[f"self ({SELF_DRAFT} draft)"] = _tvm_imported(
        tensorvm, path, work / f"{task}-self.tvm", dict(draft=SELF_DRAFT), new_tokens, threads, speculate,
        _draft_proposer(tensorvm, path, dict(quantize=SELF_DRAFT), work / f"{task}-{SELF_DRAFT}.tvm"))
    return rows


def _unavailable(e: Exception) -> str:
    return f"unavailable: {type(e).__name__}: {str(e).splitlines()[0][:200]}"


def _tvm_generate(prog, new_tokens: int, options: dict):
    def generate(ids):
        out = np.asarray(prog.generate(ids, np.ones_like(ids), max_new_tokens=new_tokens, do_sample=False,
                                       num_beams=1, **options))
        return out[0, (1 if prog.meta.get("is_encoder_decoder") is not False else ids.shape[1]):], None
    return generate


def _tvm_method(prog, new_tokens, options, proposer):
    """(the method's generate, its proposer), or "unavailable: <why>" when this build refuses the option."""
    generate = _tvm_generate(prog, new_tokens, options)
    try:
        generate(np.asarray([[5, 6, 7, 5, 6]], np.int64))
    except Exception as e:  # noqa: BLE001 - any refusal of the option makes the row unavailable
        return _unavailable(e)
    return generate, proposer


def _tvm_imported(tensorvm, ckpt, out_dir, import_options, new_tokens, threads, options, proposer):
    """The method on a program imported with `import_options` (a draft inside), or unavailable."""
    try:
        tensorvm.import_hf(ckpt, out_dir, tokenizer=False, **import_options)
        prog = tensorvm.load(out_dir, num_threads=threads)
    except Exception as e:  # noqa: BLE001
        return _unavailable(e)
    return _tvm_method(prog, new_tokens, options, proposer)


# --------------------------------------------------------------------------- acceptance by replay
# tensorvm reports no acceptance statistics, but greedy speculation is deterministic: given
# the (exact) output, each round's proposals are those of the proposer from the prefix kept
# so far, and the round keeps the agreeing prefix + 1 token. Replaying the rounds with the
# same proposer (prompt lookup: transformers' own generator, the same rule; a draft: the
# draft program's greedy tokens) counts what the engine's loop did.


def _lookup_proposer(ids: np.ndarray, prefix: list, encoder_decoder: bool, k: int) -> list:
    import torch
    from transformers.generation.candidate_generator import PromptLookupCandidateGenerator

    row = prefix if encoder_decoder else ids[0].tolist() + prefix
    gen = PromptLookupCandidateGenerator(num_output_tokens=LOOKUP_TOKENS, max_matching_ngram_size=NGRAM,
                                         max_length=10**6)
    out = gen.get_candidates(torch.tensor([row]))[0]
    return out[0, len(row):].tolist()


def _source_lookup_proposer(ids: np.ndarray, prefix: list, encoder_decoder: bool, k: int) -> list:
    """prompt_lookup_source=True: the same rule on the source followed by the decoder row
    (decoder start, then the output so far); candidates stop before an end token."""
    eos = _source_lookup_proposer.eos
    cand = _lookup_proposer(np.asarray([[]], np.int64), ids[0].tolist() + [eos] + prefix, False, k)
    return cand[:cand.index(eos)] if eos in cand else cand


def _draft_proposer(tensorvm, ckpt, import_options, out_dir):
    """propose(ids, prefix, encoder_decoder, k): the draft's k greedy tokens after the prefix."""
    state = {}

    def propose(ids, prefix, encoder_decoder, k):
        if "prog" not in state:
            tensorvm.import_hf(ckpt, out_dir, tokenizer=False, **import_options)
            state["prog"] = tensorvm.load(out_dir)
        prog = state["prog"]
        if encoder_decoder:
            start = prog.meta.get("decoder_start_token_id")
            dec = np.asarray([[start, *prefix]], np.int64)
            out = np.asarray(prog.generate(ids, np.ones_like(ids), decoder_input_ids=dec, max_new_tokens=k,
                                           do_sample=False, num_beams=1))
            return out[0, dec.shape[1]:].tolist()
        row = np.asarray([ids[0].tolist() + prefix], np.int64)
        out = np.asarray(prog.generate(row, np.ones_like(row), max_new_tokens=k, do_sample=False, num_beams=1))
        return out[0, row.shape[1]:].tolist()
    return propose


def replay(ids, tokens: list, proposer, encoder_decoder: bool, eos: int) -> Counts:
    """The target passes and proposed tokens of a greedy speculative loop that produced `tokens`
    (the first token from the prefill pass, as tensorvm's loop)."""
    c = Counts()
    c.passes, pos = 1, 1
    while pos < len(tokens) and tokens[pos - 1] != eos:
        cand = proposer(ids, tokens[:pos], encoder_decoder, DRAFT_TOKENS)
        cand = cand[:len(tokens) - pos]
        c.proposed += len(cand)
        agree = 0
        while agree < len(cand) and cand[agree] == tokens[pos + agree]:
            agree += 1
        c.passes += 1
        pos += agree + 1
    return c


# --------------------------------------------------------------------------- measuring


def measure(rows: dict, ids_list: list, reps: int, encoder_decoder: bool, eos: int) -> dict:
    """Runs each available row over every input, reps times in turn; fills the results."""
    results, gens = {}, {}
    for name, row in rows.items():
        if isinstance(row, str):
            results[name] = {"status": "unavailable", "error": row}
            continue
        gen, proposer = row if isinstance(row, tuple) else (row, None)
        gens[name] = gen
        outs = [gen(ids) for ids in ids_list]  # warm-up, and the tokens compared
        tokens = [o[0].tolist() for o in outs]
        counts = [o[1] for o in outs]
        if proposer is not None:  # tensorvm: counted by replaying its rounds
            counts = [replay(ids, t, proposer, encoder_decoder, eos) for ids, t in zip(ids_list, tokens)]
        results[name] = {"status": "ok", "tokens": tokens, "seconds": [],
                         "target_passes": sum(c.passes for c in counts if c is not None),
                         "proposed": sum(c.proposed for c in counts if c is not None)}
    for _ in range(reps):
        for name, gen in gens.items():
            t0 = time.perf_counter()
            for ids in ids_list:
                gen(ids)
            results[name]["seconds"].append(time.perf_counter() - t0)
    return results


def summarize(rows: dict) -> None:
    """tokens/s, ratio to the engine's greedy, acceptance, tokens per target pass, agreement."""
    ref = rows["transformers greedy"]["tokens"]
    for name, r in rows.items():
        if r["status"] != "ok":
            continue
        new = sum(len(t) for t in r["tokens"])
        r["new_tokens"] = new
        r["median_s"] = statistics.median(r["seconds"])
        r["tokens_per_s"] = new / r["median_s"]
        r["exact"] = r["tokens"] == ref
        greedy = rows[name.split(" ", 1)[0] + " greedy"]
        if greedy["status"] == "ok" and "tokens_per_s" in greedy:
            r["vs_greedy"] = r["tokens_per_s"] / greedy["tokens_per_s"]
        # each target pass yields its accepted draft tokens + 1 (a separate prefill pass: 0 + 1),
        # so accepted = new tokens - passes, whatever the engine's loop
        if name.endswith("greedy"):
            r["tokens_per_pass"] = 1.0
        elif r["target_passes"]:
            r["tokens_per_pass"] = new / r["target_passes"]
            r["acceptance"] = max(0, new - r["target_passes"]) / r["proposed"] if r["proposed"] else 0.0


def table(report: dict) -> str:
    lines = []
    for task, t in report["tasks"].items():
        if t["status"] != "ok":
            lines.append(f"\n### {task}: unavailable ({t['error']})")
            continue
        lines.append(f"\n### {task}: {t['inputs']} held-out inputs, up to {t['new_tokens']} new tokens each\n")
        lines.append("| engine / method | tokens/s | vs greedy | acceptance | tokens/pass | = transformers greedy |")
        lines.append("|---|---|---|---|---|---|")
        for name, r in t["rows"].items():
            if r["status"] != "ok":
                lines.append(f"| {name} | {r['error']} | | | | |")
                continue
            acc = f"{100 * r['acceptance']:.0f}%" if "acceptance" in r else "-"
            tpp = f"{r['tokens_per_pass']:.2f}" if "tokens_per_pass" in r else "-"
            vs = f"{r['vs_greedy']:.2f}x" if "vs_greedy" in r else "-"
            lines.append(f"| {name} | {r['tokens_per_s']:.1f} | {vs} | {acc} | {tpp} | "
                         f"{'yes' if r['exact'] else 'NO'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--inputs", type=int, default=12, help="held-out inputs per task")
    ap.add_argument("--new-tokens", type=int, default=64, help="max_new_tokens (generation stops at EOS)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--tasks", nargs="*", default=["translation", "extraction"])
    ap.add_argument("--engines", nargs="*", default=["transformers", "tensorvm"])
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 inputs, 16 new tokens, 1 repetition")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a row's tokens differ from greedy's")
    ap.add_argument("--out", type=Path, help="JSON report")
    ap.add_argument("--md", type=Path, help="markdown table")
    args = ap.parse_args(argv)
    if args.quick:
        args.inputs, args.new_tokens, args.reps = 2, 16, 1

    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()  # the importers load through transformers too
    torch.set_num_threads(args.threads)
    load0 = os.getloadavg()[0]
    report = {"cpu": cpu_name(), "threads": args.threads, "batch": 1, "reps": args.reps,
              "settings": {"prompt_lookup_num_tokens": LOOKUP_TOKENS, "max_matching_ngram_size": NGRAM,
                           "num_assistant_tokens": DRAFT_TOKENS, "self_draft": SELF_DRAFT},
              "load_before": load0, "tasks": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for task in args.tasks:
            fixture = MARIAN if task == "translation" else COPY
            if not (fixture / "config.json").is_file():  # a fixture not trained and committed yet
                why = f"{fixture.name} is not committed (train it: see tests/fixtures/data/README.md)"
                report["tasks"][task] = {"status": "unavailable", "error": why}
                print(f"{task}: unavailable: {why}", file=sys.stderr)
                continue
            ids_list = inputs(task, args.inputs)
            rows = {}
            if "transformers" in args.engines:
                rows.update({f"transformers {k}": v for k, v in hf_rows(task, args.new_tokens).items()})
            if "tensorvm" in args.engines:
                rows.update({f"tensorvm {k}": v for k, v in tvm_rows(task, args.new_tokens, args.threads,
                                                                      Path(tmp)).items()})
            eos = json.loads(((MARIAN if task == "translation" else COPY) / "config.json").read_text())["eos_token_id"]
            _source_lookup_proposer.eos = eos
            results = measure(rows, ids_list, args.reps, True, eos)
            summarize(results)
            report["tasks"][task] = {"status": "ok", "inputs": len(ids_list), "new_tokens": args.new_tokens,
                                     "rows": results}
    report["load_after"] = os.getloadavg()[0]
    under_load = max(report["load_before"], report["load_after"]) > (os.cpu_count() or 1)
    report["under_load"] = under_load
    head = (f"{report['cpu']}, {args.threads} threads, batch 1, medians of {args.reps}"
            f"{' (UNDER LOAD: load %.1f / %.1f on %d cores)' % (report['load_before'], report['load_after'], os.cpu_count()) if under_load else ''}")
    text = head + "\n" + table(report)
    print(text)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    if args.md:
        args.md.write_text(text + "\n")
    bad = [(task, name) for task, t in report["tasks"].items() for name, r in t.get("rows", {}).items()
           if r["status"] == "ok" and not r["exact"]]
    if bad:
        print(f"tokens differ from transformers' greedy: {bad}", file=sys.stderr)
    return 1 if (bad and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
