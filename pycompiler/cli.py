"""The `tensorvm` command: run, replay and inspect program directories; import
checkpoints; list the ops; say where the C++ package is.

    tensorvm run PROGRAM FUNCTION [--inputs in.npz|in.safetensors] [--arg NAME=VALUE]...
                 [--ids "1 2 3; 4 5"] [--decoder-ids "9 4; 9 7"] [--wav FILE.wav] [--outputs out.npz|out.safetensors]
                 [--threads N] [--time] [--stream] [--max-instructions N] [--profile] [--trace out.json]
                 [--language LANG] [--task transcribe|translate]
    tensorvm replay PROGRAM FUNCTION [the same options but --threads, --max-instructions and --profile]
    tensorvm run|replay PROGRAM tokenize|translate|complete --text "..." | --text-file F [--arg NAME=VALUE]...
        [--src-lang LANG] [--tgt-lang LANG]
    tensorvm profile PROGRAM FUNCTION [the inputs of run] [--threads N] [--warmup N] [--repeat N]
                 [--top N] [--trace out.json] [--cpu-time]
    tensorvm diff PROGRAM [PROGRAM_B] FUNCTION [the inputs of run] [--rtol R] [--atol A] [--all]
    tensorvm optimize PROGRAM -o OUT [--passes fold,rewrite,cse,dce,fuse,merge]
    tensorvm compile PROGRAM -o DIR [--name NAME] [--selective [--source SRC] [--kernel-variants avx2,...]]
    tensorvm inspect PROGRAM [--ir | --dot FUNCTION]
    tensorvm inspect --memory PROGRAM [FUNCTION] [--shapes NAME=1x12[:dtype]...] [the inputs of run] [--threads N]
    tensorvm import-hf CHECKPOINT_DIR -o PROGRAM [--quantize SCHEME [--group-size N] [--tables SCHEME] [--keep-f32 PATTERN ...]] [--draft SCHEME] [--draft-model CHECKPOINT_DIR] [--no-optimize] [--no-tokenizer]
                       [--plugin MODULE_OR_FILE.py]...
    tensorvm ops [--json]
    tensorvm selective-build PROGRAM... -o DIR [--source SRC] [--kernel-variants avx2,...]
    tensorvm bundle PROGRAM FUNCTION [the inputs of run] [--atol A] [--rtol R]
    tensorvm --cmake-dir | --include-dir

run/replay take the inputs and options of `tensorvm-run`, built by its code (see
cli_io.py): arrays by parameter name or arr_0, arr_1, ... (a scalar parameter takes a 0-d
array), --arg for scalars and options, --ids for input_ids/attention_mask, --decoder-ids
for decoder_input_ids, --wav for audio. Outputs are saved as arr_0,
arr_1, ... (scalars as 0-d arrays), or printed; Whisper's transcribe prints its transcript
as text, and the text verbs are tensorvm-run's own (cli_text.py). Errors are one line on stderr and exit status 1;
--debug shows the traceback. A closed stdout (`tensorvm inspect P | head`) ends the
command quietly with status 141, as SIGPIPE ends C programs.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Optional, Sequence

from .cli_io import CLIError, build_inputs, check_output_name, save_outputs
from .generation.streaming import stream_printer
from .quantize import QUANTIZATIONS


def cmd_run(args, replay: bool) -> int:
    import time

    from .program import load

    check_output_name(args.outputs)
    trace = getattr(args, "trace", None)  # run only, as --profile
    if trace is not None and not trace.endswith(".json"):
        raise CLIError(f"--trace {trace}: the name must end in .json")
    profiled = getattr(args, "profile", False) or trace is not None
    if profiled and args.stream:
        raise CLIError("--stream and --profile go one at a time in tensorvm run")
    program = load(args.program, num_threads=getattr(args, "threads", 1),
                   max_instructions=getattr(args, "max_instructions", 0))
    from .cli_text import VERBS, print_segments, print_transcript, run_verb

    if args.function in VERBS and args.function not in program.functions:
        return run_verb(program, args, replay)
    if args.text is not None or args.text_file is not None:
        raise CLIError("--text and --text-file go with the verbs tokenize, translate and complete")
    if args.src_lang is not None or args.tgt_lang is not None:
        raise CLIError("--src-lang and --tgt-lang go with the verbs tokenize and translate")
    fn = program.function(args.function)
    stamps = getattr(args, "timestamps", False)
    if (stamps or getattr(args, "format", None)) and (args.function != "transcribe" or not stamps):
        raise CLIError("--timestamps [--format F] goes with Whisper's transcribe")
    if stamps and not any(a.split("=", 1)[0] == "return_timestamps" for a in (args.arg or [])):
        args.arg = [*(args.arg or []), "return_timestamps=true"]
    inputs = build_inputs(program, args.function, args)
    t0 = time.perf_counter()
    on_emit = stream_printer() if args.stream else None
    if profiled:  # as tensorvm-run --profile: the run under the profiler, its tables after the outputs
        prof = program.profile(args.function, *inputs, trace=trace is not None)
        result = prof.result
    else:
        result = (program.replay if replay else program.run)(args.function, *inputs, on_emit=on_emit)
    ms = (time.perf_counter() - t0) * 1e3
    values = list(result) if isinstance(result, tuple) and len(fn.return_types) > 1 else \
        ([] if result is None and not fn.return_types else [result])
    # Whisper's transcript as text when the program carries its tokenizer, as tensorvm-run prints it.
    save_outputs(args.outputs, values, printed=lambda i, v: i == 0 and args.function == "transcribe" and
                 (print_segments(program, v, args.format) is None if stamps else print_transcript(program, v)))
    if args.time:
        print(f"time: {ms:.2f} ms")
    if profiled:
        print(f"\n{prof.report(20)}", end="")
        if trace is not None:
            prof.trace(trace)
            print(f"trace: {trace}")
    return 0


def cmd_profile(args) -> int:
    from .program import load

    if args.trace is not None and not args.trace.endswith(".json"):
        raise CLIError(f"--trace {args.trace}: the name must end in .json")
    program = load(args.program, num_threads=args.threads, max_instructions=args.max_instructions)
    inputs = build_inputs(program, args.function, args)
    prof = program.profile(args.function, *inputs, warmup=args.warmup, repeat=args.repeat, trace=args.trace is not None,
                           cpu_time=args.cpu_time)
    runs = f"{args.repeat} run{'s' if args.repeat > 1 else ''}"
    print(f"profile of {args.function} in {program.path}: {runs}, {args.threads} thread{'s' if args.threads > 1 else ''}, "
          f"{prof.run_seconds * 1e3:.3f} ms{' of CPU time' if args.cpu_time else ''}\n")
    print(prof.report(args.top), end="")
    if args.trace is not None:
        prof.trace(args.trace)
        print(f"\ntrace: {args.trace} (open in https://ui.perfetto.dev or chrome://tracing)")
    return 0


def cmd_diff(args) -> int:
    from .diff import diff
    from .program import load

    if len(args.paths) not in (2, 3):
        raise CLIError("diff takes PROGRAM FUNCTION (the VM against the replay) or PROGRAM_A PROGRAM_B FUNCTION")
    *paths, function = args.paths
    program = load(paths[0])
    inputs = build_inputs(program, function, args)
    report = diff(program, function, *inputs, other=paths[1] if len(paths) == 2 else None, rtol=args.rtol, atol=args.atol)
    print(report.summary())
    if args.all:
        print(report.table(), end="")
        print()
    print(report.first_report(), end="")
    return 0


def cmd_optimize(args) -> int:
    from pathlib import Path

    from .passes import DEFAULT_PASSES, MergeLinears, optimize_dir, rewrite_pass, standard_rules

    known = dict(DEFAULT_PASSES, merge=MergeLinears)  # merge is made with the program's weights
    names = [n.strip() for n in args.passes.split(",") if n.strip()]
    if "rewrite" in names:
        known["rewrite"] = rewrite_pass(standard_rules())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CLIError(f"--passes: no pass '{unknown[0]}' (passes: {', '.join(known)})")
    if Path(args.output).resolve() == Path(args.program).resolve():
        raise CLIError("optimize: -o must name another directory than the program's")
    stats = optimize_dir(args.program, args.output, [(n, known[n]) for n in names])
    removed = ", ".join(f"{n} {k}" for n, k in stats.removed.items())
    print(f"wrote {args.output}: {stats.before} -> {stats.after} statements ({removed}; {stats.rounds} rounds)")
    return 0


def cmd_compile(args) -> int:
    import shlex
    from pathlib import Path

    from .aot import compile_program

    if Path(args.output).resolve() == Path(args.program).resolve():
        raise CLIError("compile: -o must name another directory than the program's")
    variants = [v.strip() for v in (args.kernel_variants or "").split(",") if v.strip()]
    files = compile_program(args.program, args.output, name=args.name, selective=args.selective, source=args.source,
                            kernel_variants=variants)
    lib = next(f for f in files if f.endswith(".cpp") and not f.endswith("_run.cpp"))[:-4]
    ops = [ln for ln in files["ops.txt"].read_text().splitlines() if ln and not ln.startswith("#")]
    runtime = (f"a runtime built from the source tree with only its {len(ops)} ops" if args.selective else
               "the installed runtime")
    configure = "-G Ninja" if args.selective else '-Dtensorvm_DIR="$(tensorvm --cmake-dir)"'
    src, build = shlex.quote(args.output), shlex.quote(args.output + "-build")  # a command to paste
    print(f"wrote {args.output}: {', '.join(files)}\n"
          # the build directory outside the output, which a recompile replaces as a whole
          f"build: cmake -S {src} -B {build} {configure} && "
          f"cmake --build {build}   (library {lib}, command line {lib}-run, with {runtime})")
    return 0


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def cmd_inspect(args) -> int:
    from .program import load

    if args.function is not None and not args.memory:
        raise CLIError("inspect: a FUNCTION goes with --memory (--dot FUNCTION draws one)")
    if not args.memory and (args.shapes or args.inputs or args.arg or args.ids):
        raise CLIError("inspect: --shapes, --inputs, --arg and --ids go with --memory")
    program = load(args.program, num_threads=args.threads)
    if args.memory:
        from .cli_memory import cmd_memory

        return cmd_memory(args, program)
    if args.ir:
        sys.stdout.write(program.ir)
        return 0
    if args.dot:
        from .dot import function_dot

        sys.stdout.write(function_dot(program.module, args.dot))
        return 0
    out = [f"program {program.path}"]
    meta = {k: v for k, v in program.meta.items() if k not in ("format", "version")}
    out.append(f"format {program.meta['format']} version {program.meta['version']}")
    if meta:
        out.append("meta: " + json.dumps(meta, sort_keys=True))
    out.append("")
    out.append(f"functions ({len(program.module.functions)}):")
    for f in program.module.functions:
        counts = f.op_counts()
        total = sum(counts.values())
        out.append(f"  {f.signature()[4:-1]}")
        out.append(f"    {total} instructions: " + ", ".join(f"{op} {n}" for op, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))))
    weights = program.weights_info()
    total = sum(w[3] for w in weights)
    out.append("")
    out.append(f"weights ({len(weights)}, {total} bytes = {_human(total)}):")
    width = max((len(w[0]) for w in weights), default=0)
    for name, dtype, shape, nbytes in weights:
        out.append(f"  {name.ljust(width)}  {dtype:<4} {str(list(shape)):<16} {nbytes} bytes")
    print("\n".join(out))
    return 0


def cmd_ops(args) -> int:
    from . import registry

    specs = list(registry.real_ops().values())
    if args.json:
        rows = [{"name": s.name, "group": s.group, "signature": s.signature_text, "outputs": list(s.outputs),
                 "params": [{"name": p.name, "kind": p.kind, "variadic": p.variadic, "has_default": p.has_default,
                             "default": p.default} for p in s.params], "doc": s.doc} for s in specs]
        print(json.dumps(rows, indent=2))
        return 0
    group = None
    for s in specs:
        if s.group != group:
            group = s.group
            print(f"{'' if s is specs[0] else chr(10)}[{group}]")
        print(f"  {s.signature_text}")
    return 0


def cmd_selective_build(args) -> int:
    from .selective import write_selective_build

    variants = [v.strip() for v in (args.kernel_variants or "").split(",") if v.strip()]
    sel = write_selective_build(args.programs, args.output, source=args.source, kernel_variants=variants)
    print(f"wrote {args.output}: {len(sel.ops)} of {sel.builtin_count} ops ({', '.join(sorted(sel.ops))})")
    if sel.app_ops:
        print(f"the app registers: {', '.join(sorted(sel.app_ops))} (not built-in ops; vm::register_op)")
    print(f"build: cmake -S {args.output} -B {args.output}/build -G Ninja && "
          f"cmake --build {args.output}/build --target tensorvm-run")
    return 0


def cmd_bundle(args) -> int:
    from .bundle import bundle
    from .program import load

    program = load(args.program)
    inputs = build_inputs(program, args.function, args)
    case = bundle(program, args.function, inputs, atol=args.atol, rtol=args.rtol, replace=args.replace)
    print(f"bundled in {args.program}: case {case.index} {args.function}, {len(case.outputs)} expected output(s); "
          f"check with: tensorvm-run {args.program} verify")
    return 0


def cmd_info(args) -> int:
    from .. import _C

    if args.json:
        print(json.dumps(_C.cpu_info(), indent=2))
    else:
        print(_C.describe_cpu(), end="")
    return 0


def cmd_import_hf(args) -> int:
    from .import_hf import import_hf

    out = import_hf(args.checkpoint, args.output, quantize=args.quantize, optimize=args.optimize,
                    tokenizer=args.tokenizer, plugins=args.plugin, group_size=args.group_size, keep_f32=args.keep_f32,
                    tables=args.tables, draft=args.draft, draft_model=args.draft_model)
    from .program_dir import read_meta
    from .tokenizer_attach import why_no_tokenizer

    meta = read_meta(out)
    tokenizer = meta.get("tokenizer")
    why = "--no-tokenizer" if not args.tokenizer else why_no_tokenizer(args.checkpoint, meta.get("model_type", ""))
    print(f"wrote {out} (" + (f"tokenizer: {tokenizer['kind']})" if tokenizer else f"no tokenizer: {why}; docs/text.md)"))
    return 0


def _whisper_options(parser) -> None:
    """--wav, --language and --task, as tensorvm-run takes them."""
    parser.add_argument("--wav", "--audio", dest="wav",
                        help="16 kHz mono audio for a parameter named audio (Whisper's transcribe)")
    parser.add_argument("--timestamps", action="store_true",
                        help="Whisper's transcribe: return_timestamps, printed as segments")
    parser.add_argument("--format", choices=("text", "srt", "vtt", "json"),
                        help="with --timestamps: how the segments are printed (text)")
    parser.add_argument("--language", help="Whisper: the decoder prompt's language, built with the program's tokenizer "
                        "(fr or french; without it and --decoder-ids, the program detects it)")
    parser.add_argument("--task", help="Whisper: transcribe or translate, in the decoder prompt")


def _run_parsers(sub, common) -> None:
    """run, replay and profile: a function of a program on inputs given as tensorvm-run takes them."""
    for name, help_ in (("run", "run a function in the C++ VM"), ("replay", "run a function with the Python reference ops"),
                        ("profile", "run a function in the C++ VM under the profiler: op, call and instruction tables")):
        r = sub.add_parser(name, help=help_, parents=[common])
        r.add_argument("program", help="program directory")
        r.add_argument("function", help="function to run")
        r.add_argument("--inputs", help=".npz or .safetensors of inputs (arrays arr_0.. or named after the parameters)")
        r.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                       help="a scalar or option parameter, parsed by its declared type (repeatable)")
        r.add_argument("--ids", help='token ids for input_ids (and attention_mask): "1 2 3; 4 5", rows padded')
        r.add_argument("--decoder-ids", dest="decoder_ids",
                       help='a decoder prompt for decoder_input_ids: "59513 12; 59513 7", rows of one length')
        _whisper_options(r)
        if name == "profile":
            r.add_argument("--warmup", type=int, default=0, help="unmeasured runs first (fills the buffer pool)")
            r.add_argument("--repeat", type=int, default=1, help="measured runs")
            r.add_argument("--top", type=int, default=20, help="rows of the instruction table")
            r.add_argument("--trace", metavar="OUT.json", help="write a Chrome trace / Perfetto JSON of the run")
            r.add_argument("--cpu-time", dest="cpu_time", action="store_true",
                           help="measure the thread's CPU time, not wall time (a busy machine; use one thread)")
        else:
            r.add_argument("--outputs", help=".npz or .safetensors to write the outputs to (printed when omitted)")
            r.add_argument("--time", action="store_true", help="print the time the call took")
            r.add_argument("--stream", action="store_true", help="print each step's tokens as the program emits them")
            r.add_argument("--text", help="with FUNCTION tokenize, translate or complete: the input text, a line per input")
            r.add_argument("--text-file", dest="text_file", help="the same, from a UTF-8 file")
            r.add_argument("--src-lang", dest="src_lang", help="tokenize, translate (M2M100 fr, NLLB fra_Latn): the "
                           "source language, in place of the one the program was imported with")
            r.add_argument("--tgt-lang", dest="tgt_lang", help="translate: the target language (generate's "
                           "forced_bos_token_id)")
        if name == "run":
            r.add_argument("--profile", action="store_true", help="run under the profiler and print its tables after "
                           "the outputs (as tensorvm-run --profile)")
            r.add_argument("--trace", metavar="OUT.json", help="with --profile (implied): write a Chrome trace of the run")
        if name != "replay":
            r.add_argument("--threads", type=int, default=1, help="threads for the kernels")
            r.add_argument("--max-instructions", dest="max_instructions", type=int, default=0, metavar="N",
                           help="stop a run past N instructions (0: no limit)")


def _inputs_parser() -> argparse.ArgumentParser:
    """The inputs of run, as a parent parser of diff and bundle."""
    inputs = argparse.ArgumentParser(add_help=False)  # the inputs of run, for diff and bundle
    inputs.add_argument("--inputs", help=".npz or .safetensors of inputs, as for run")
    inputs.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE", help="a scalar or option parameter")
    inputs.add_argument("--ids", help='token ids for input_ids (and attention_mask): "1 2 3; 4 5"')
    inputs.add_argument("--decoder-ids", dest="decoder_ids", help="a decoder prompt for decoder_input_ids")
    _whisper_options(inputs)
    return inputs


def _program_parsers(sub, common, inputs) -> None:
    """diff, optimize, compile and inspect: tools over one program."""
    d = sub.add_parser("diff", help="compare every instruction's results: the VM against the replay, or two programs",
                       parents=[common, inputs])
    d.add_argument("paths", nargs="+", metavar="PROGRAM [PROGRAM_B] FUNCTION",
                   help="one program (the C++ VM against the Python replay) or two (both in the VM, aligned by SSA name)")
    d.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance, of the reference's largest magnitude")
    d.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance")
    d.add_argument("--all", action="store_true", help="print every compared result, not only the first failure's neighbours")
    z = sub.add_parser("optimize", help="run the graph passes (constant folding, CSE, DCE, fusions) over a program",
                       parents=[common])
    z.add_argument("program", help="program directory")
    z.add_argument("-o", "--output", required=True, help="program directory to write")
    z.add_argument("--passes", default="fold,cse,dce,fuse,merge", help="the passes, in order, run to a fixpoint "
                   "(default: fold,cse,dce,fuse,merge; rewrite applies the standard pattern rules)")
    k = sub.add_parser("compile", help="write the program as C++ (a library with run(name, inputs) and a command line) "
                       "that builds against the installed runtime (docs/aot.md)", parents=[common])
    k.add_argument("program", help="program directory")
    k.add_argument("-o", "--output", required=True, help="directory to write the C++ and its CMakeLists.txt into")
    k.add_argument("--name", default=None, help="the C++ namespace, library and file names: ASCII letters, digits and "
                   "single underscores, starting with a letter (default: from the program's directory name)")
    k.add_argument("--selective", action="store_true", help="build the runtime from the tensorvm source tree with only "
                   "the ops the program calls, sized for a device (default: link the installed runtime)")
    k.add_argument("--source", help="with --selective: the tensorvm source tree (default: the one this package runs from)")
    k.add_argument("--kernel-variants", dest="kernel_variants", metavar="V1,V2",
                   help="with --selective: the kernel variants to keep besides scalar, e.g. avx2 or neon "
                   "(default: all the target's)")
    i = sub.add_parser("inspect", help="functions, instruction counts and weights of a program", parents=[common])
    i.add_argument("program", help="program directory")
    i.add_argument("function", nargs="?", help="with --memory: the function to measure (default: generate)")
    shown = i.add_mutually_exclusive_group()
    shown.add_argument("--ir", action="store_true", help="print the IR text")
    shown.add_argument("--dot", metavar="FUNCTION", help="print FUNCTION as a Graphviz graph (dot -Tpng)")
    shown.add_argument("--memory", action="store_true",
                       help="measure the arena FUNCTION needs for the given inputs (docs/runtime.md, 'A memory arena')")
    i.add_argument("--shapes", nargs="+", action="extend", default=[], metavar="NAME=1x12[:dtype]",
                   help="with --memory: inputs of these shapes (integers 1, floats 0; dtype i64 for *ids/*mask, else f32)")
    i.add_argument("--inputs", help="with --memory: .npz or .safetensors of inputs, as for run")
    i.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE", help="with --memory: a scalar or option")
    i.add_argument("--ids", help='with --memory: token ids for input_ids (and attention_mask): "1 2 3; 4 5"')
    i.add_argument("--threads", type=int, default=1, help="with --memory: threads for the kernels")
    i.add_argument("--json", action="store_true", help="with --memory: machine-readable output")


def _other_parsers(sub, common, inputs) -> None:
    """import-hf, ops, selective-build, bundle and info."""
    h = sub.add_parser("import-hf", help="import a transformers checkpoint directory", parents=[common])
    h.add_argument("checkpoint", help="checkpoint directory (config.json, weights, generation_config.json)")
    h.add_argument("-o", "--output", required=True, help="program directory to write")
    h.add_argument("--quantize", choices=list(QUANTIZATIONS), default=None,
                   help="; ".join(f"{k}: {v}" for k, v in QUANTIZATIONS.items()) + " (docs/quantization.md)")
    h.add_argument("--group-size", type=int, default=None, metavar="N",
                   help="with a 4-bit --quantize: weights per scale, a multiple of 32 (default 32)")
    h.add_argument("--tables", choices=list(QUANTIZATIONS), default=None, metavar="SCHEME",
                   help="with --quantize: store the token embeddings and the output projection as this scheme "
                        "stores them (e.g. --quantize int4 --tables int8)")
    h.add_argument("--draft", choices=list(QUANTIZATIONS), default=None, metavar="SCHEME",
                   help="put a draft model for speculative decoding in the program: the same checkpoint stored as "
                        "SCHEME (self-speculation, e.g. --draft int4), or --draft-model's at SCHEME; generate runs it "
                        "with use_draft=True (docs/generation.md)")
    h.add_argument("--draft-model", default=None, metavar="CHECKPOINT_DIR",
                   help="a draft checkpoint of the same vocabulary (f32 unless --draft SCHEME)")
    h.add_argument("--keep-f32", action="append", default=[], metavar="PATTERN",
                   help="with --quantize: leave the matrices whose weight names match this fnmatch pattern f32 "
                        "(repeatable; a pattern matching no matrix is an error)")
    h.add_argument("--no-optimize", dest="optimize", action="store_false",
                   help="write the program as traced, without the graph passes (folding, CSE, DCE, fusions)")
    h.add_argument("--no-tokenizer", dest="tokenizer", action="store_false",
                   help="leave the checkpoint's tokenizer out (the program takes and gives token ids); without it, "
                        "a tokenizer the text library cannot read exactly refuses the import")
    h.add_argument("--plugin", action="append", default=[], metavar="MODULE_OR_FILE.py",
                   help="import this module first (a name on sys.path, or a .py file): it may register an "
                        "architecture with tensorvm.register_architecture (repeatable; also TENSORVM_PLUGINS)")
    o = sub.add_parser("ops", help="list the ops of the registry", parents=[common])
    o.add_argument("--json", action="store_true", help="machine-readable output")
    s = sub.add_parser("selective-build", parents=[common],
                       help="write a CMake project building tensorvm-run with only the ops the programs call")
    s.add_argument("programs", nargs="+", metavar="PROGRAM", help="program directories")
    s.add_argument("-o", "--output", required=True, help="directory to write ops.txt and CMakeLists.txt to")
    s.add_argument("--source", help="the tensorvm source tree (default: the one this package runs from)")
    s.add_argument("--kernel-variants", dest="kernel_variants", metavar="V1,V2",
                   help="the kernel variants to keep besides scalar, e.g. avx2 or neon (default: all the target's)")
    b = sub.add_parser("bundle", parents=[common, inputs],
                       help="store example inputs and the outputs they give in the program, for tensorvm-run verify")
    b.add_argument("program", help="program directory")
    b.add_argument("function", help="function to run")
    b.add_argument("--atol", type=float, default=1e-4, help="absolute tolerance of float outputs (integers: exact)")
    b.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance of float outputs")
    b.add_argument("--replace", action="store_true", help="drop the cases bundled before")
    n = sub.add_parser("info", help="the CPU, its features and the kernel variant in use (TENSORVM_ISA forces one)",
                       parents=[common])
    n.add_argument("--json", action="store_true", help="machine-readable output")


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors")
    p = argparse.ArgumentParser(prog="tensorvm", description="Run, replay and inspect tensorvm programs.", parents=[common])
    where = p.add_mutually_exclusive_group()
    where.add_argument("--cmake-dir", action="store_true",
                       help="print the directory of tensorvmConfig.cmake (for -Dtensorvm_DIR=...) and exit")
    where.add_argument("--include-dir", action="store_true", help="print the C++ include directory and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    _run_parsers(sub, common)
    inputs = _inputs_parser()
    _program_parsers(sub, common, inputs)
    _other_parsers(sub, common, inputs)
    return p


COMMANDS = {
    "run": lambda args: cmd_run(args, replay=False),
    "replay": lambda args: cmd_run(args, replay=True),
    "profile": cmd_profile,
    "diff": cmd_diff,
    "optimize": cmd_optimize,
    "compile": cmd_compile,
    "inspect": cmd_inspect,
    "import-hf": cmd_import_hf,
    "ops": cmd_ops,
    "info": cmd_info,
    "selective-build": cmd_selective_build,
    "bundle": cmd_bundle,
}


def _dispatch(parser: argparse.ArgumentParser, args) -> int:
    if args.cmake_dir or args.include_dir:
        from .locations import get_cmake_dir, get_include_dir

        print(get_cmake_dir() if args.cmake_dir else get_include_dir())
        return 0
    if args.command is None:
        parser.error("a COMMAND is required")
    return COMMANDS[args.command](args)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        code = _dispatch(parser, args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except KeyboardInterrupt:
        if debug:
            raise
        print("tensorvm: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 -- every error becomes one line unless --debug
        if debug:
            raise
        msg = str(e).strip().splitlines()
        if isinstance(e, KeyError) and msg and msg[0].startswith(("'", '"')) and msg[0].endswith(("'", '"')):
            msg[0] = msg[0][1:-1]
        detail = msg[0] if msg else type(e).__name__
        if len(msg) > 1:
            detail += " (" + "; ".join(m.strip() for m in msg[1:] if m.strip())[:300] + ")"
        print(f"tensorvm: error: {detail}", file=sys.stderr)
        return 1


def _stdout_closed() -> int:
    """The reader of stdout went away (`tensorvm inspect P | head`): stop quietly.

    Python's documented recipe: point stdout at /dev/null so the interpreter's final
    flush cannot raise again, and exit 128 + SIGPIPE like a C program would."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is not a file (captured in a test)
        pass
    return 141


if __name__ == "__main__":
    sys.exit(main())
