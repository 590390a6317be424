"""Fuzz target `aot`: `tensorvm compile`'s emitter (pycompiler/aot, pycompiler/escape.py)
on programs made of hostile names, checked at the lexer level (aot_check.py).

Each case draws function and value names (C++ keywords, the generated code's own names,
macros, reserved forms, markers), weight names, emit strings, the program directory's
path, --name and a --selective source tree (any text: newlines, CR, `*/`, `\\`, quotes,
`${...}`, `$(...)`, `@VAR@`, template placeholders, non-ASCII and bidirectional
controls, each with a marker), fills an IR skeleton that has every construct the emitter
writes (calls, a layer loop, a weight table, while_loop, cond, emit, unread parameters),
and generates the project's files as `tensorvm compile` does. A case passes when the IR
checker or the emitter refuses it (escape.EscapeError, CompileError), or when every file
passes aot_check.check_project: no input text is code.

Runs under atheris (coverage-guided) when it is installed, else as a seeded random loop:
  python3 tests/fuzz/fuzz_aot.py --seconds 60 [--compile 3] [--seed S] [--runs N]
  python3 tests/fuzz/fuzz_aot.py --replay SEED:INDEX|FILE   (a case of the seeded loop, an atheris input)
`--compile N` first compiles N accepted cases of the seeded generator (syntax only, -Wall
-Wextra -Werror, against this checkout's headers): seconds each, so only a few.
A finding writes the case (its files and the drawn names) under --artifacts and exits 1.
Needs an importable tensorvm (pip-installed, or PYTHONPATH=BUILD/pkg of .ci/dev-build).
"""
from __future__ import annotations

import argparse
import json
import keyword
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aot_check import MARKER, Violation, check_project, loader_strings  # noqa: E402

FRAGMENTS = ["\n", "\r", "\r\n", "*/", "/*", "//", "\\", "\\\n", '"', "'", "${X}", "${CMAKE_COMMAND}", "$(id)",
             "$ENV{HOME}", "$CACHE{X}", "@VAR@", "@NS:namespace@", "@SOURCE:cpp_comment@", "@DEVICE_RUNTIME:code@",
             "??/", "#", "#[[", "]]", "[[", "[=[", ";", "(", ")", "{}", "{", "}", "\t", "\x00", "\x7f", "\x1b",
             "é", "\u202e", "\u2066", "\u2028", "\u0085", "\ufeff", "\U0001f600", "\x0b", "\x0c", " ", "`", "<", ">"]
PAYLOADS = ["\nstatic inline const int {m} = std::system(\"id\");\n//", "\nexecute_process(COMMAND {m})\n#",
            "*/ int {m}; /*", '"; int {m}; "', "\\\n{m}();", "\r{m}();", ")\nadd_custom_target({m} ALL)\n#(",
            "\"\nset({m} 1)\n\"", "\u2028{m}();"]
MACROS = ["linux", "unix", "i386", "NULL", "EOF", "INT64_MIN", "assert", "errno", "stdin", "SIZE_MAX", "offsetof"]
RESERVED_FORMS = ["_x", "__x", "a__b", "_X", "x_", "x__", "_", "v_x", "f_x", "w_x", "op_add", "t_loop_1", "t_layer",
                  "i_1", "s_x", "l_0", "v_0x", "loop_1", "layer", "none", "true_", "false_", "f_nan", "lit"]
SKELETON = """# tensorvm ir 1
def {LAYER}({lx}: Tensor, {lw}: Tensor, {li}: int) -> Tensor:
    {lt} = param({TABLE}, {li})
    {la} = add({lx}, {lt})
    {lb} = add({la}, {lw})
    return {lb}

def {COND}({ci}: int, {cacc}: Tensor) -> bool:
    {cgo} = lt({ci}, 3)
    return {cgo}

def {BODY}({bi}: int, {bacc}: Tensor) -> tuple[int, Tensor]:
    {bn} = add({bi}, 1)
    {bacc1} = add({bacc}, 0.5)
    return {bn}, {bacc1}

def {PICK}({px}: Tensor, {py}: Tensor) -> Tensor:
    return {px}

def {OTHER}({ox}: Tensor, {oy}: Tensor) -> Tensor:
    return {oy}

def {MAIN}({mx}: Tensor, {mflag}: bool) -> Tensor:
    {mw} = param({W1})
    {mw2} = param({W2})
    {mw3} = param({TABLE}, 1)
    {my} = add({mx}, {mw})
    {my2} = add({my}, {mw2})
    {me} = emit({S1}, {my2})
    {me2} = emit({S2}, {my})
    {ml0} = {LAYER}({my2}, {mw3}, 0)
    {ml1} = {LAYER}({ml0}, {mw3}, 1)
    {mc} = cond({mflag}, {PICK}, {OTHER}, {ml1}, {my})
    {mi0} = add(0, 0)
    {mi}, {macc} = while_loop({COND}, {BODY}, {mi0}, {mc})
    return {macc}
"""
FUNCTIONS = ["LAYER", "COND", "BODY", "PICK", "OTHER", "MAIN"]
STRINGS = ["TABLE", "W1", "W2", "S1", "S2"]


class Draw:
    """Choices from a seeded random.Random or from atheris' bytes."""

    def __init__(self, rng: random.Random = None, fdp=None):
        self.rng, self.fdp = rng, fdp

    def int(self, lo: int, hi: int) -> int:
        return self.fdp.ConsumeIntInRange(lo, hi) if self.fdp else self.rng.randint(lo, hi)

    def pick(self, seq):
        return seq[self.int(0, len(seq) - 1)]


class Case:
    def __init__(self, pool: list[str]):
        self.pool = pool
        self.marks = 0

    def marker(self) -> str:
        self.marks += 1
        return f"{MARKER}{self.marks}"

    def text(self, d: Draw, path: bool = False) -> str:
        """Hostile text with at least one marker; a path may hold undecodable bytes."""
        parts = []
        for _ in range(d.int(1, 6)):
            k = d.int(0, 5)
            if k == 0:
                parts.append(d.pick(PAYLOADS).format(m=self.marker()))
            elif k == 1:
                parts.append(self.marker())
            elif k == 2:
                parts.append("".join(chr(d.int(32, 126)) for _ in range(d.int(1, 8))))
            elif k == 3:
                parts.append(chr(d.pick([d.int(0, 0x1F), d.int(0x80, 0x2FF), d.int(0x2000, 0x206F), d.int(0x1F300, 0x1F64F)])))
            elif k == 4 and path:
                parts.append(chr(0xDC80 + d.int(0, 127)))  # an undecodable byte (surrogateescape)
            else:
                parts.append(d.pick(FRAGMENTS))
        parts.insert(d.int(0, len(parts)), self.marker())
        s = "".join(parts)
        return s.replace("\x00", "") if path else s

    def identifier(self, d: Draw) -> str:
        k = d.int(0, 3)
        if k == 0:
            return self.marker()
        if k == 1:
            return d.pick(["_", "__", "x_", "_x_"]).replace("x", self.marker())
        return d.pick(self.pool)


def _pool() -> list[str]:
    """C++ keywords, macros, reserved forms and every identifier the templates and the
    emitter write (those of a project generated from plain names): the names a program's
    own could collide with."""
    from tensorvm.pycompiler import registry
    from tensorvm.pycompiler.escape import CPP_KEYWORDS
    from tensorvm.pycompiler.ir_check import RESERVED

    slots = sorted(set(re.findall(r"\{([A-Za-z0-9]+)\}", SKELETON)) - set(STRINGS))
    plain = {"fill": {k: f"n{i}" for i, k in enumerate(slots)}, "strings": {k: f"{k}.{{}}" for k in STRINGS},
             "path": "/tmp/plain.tvm", "name": "plain", "tree": ""}
    words = set(CPP_KEYWORDS) | set(MACROS) | set(RESERVED_FORMS)
    for text in generate(plain)[0].values():
        words |= set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", text))
    refused = set(RESERVED) | set(registry.real_ops()) | {"True", "False", "None"}
    return sorted(w for w in words if not keyword.iskeyword(w) and w not in refused and not re.fullmatch(r"n\d+", w))


def draw_case(d: Draw, pool: list[str]) -> dict:
    c = Case(pool)
    names: list[str] = []
    slots = sorted(set(re.findall(r"\{([A-Za-z0-9]+)\}", SKELETON)))
    fill = {}
    for slot in slots:
        if slot in STRINGS:
            continue
        n = c.identifier(d)
        while n in names:
            n = c.identifier(d) + "_" + str(len(names))
        names.append(n)
        fill[slot] = n
    strings = {s: c.text(d) for s in STRINGS}
    if "{}" not in strings["TABLE"]:
        cut = d.int(0, len(strings["TABLE"]))
        strings["TABLE"] = strings["TABLE"][:cut] + "{}" + strings["TABLE"][cut:]
    path = c.text(d, path=True)
    # mostly names and trees compile takes, so most cases reach the checks
    k = d.int(0, 7)
    name = None if k < 4 else c.identifier(d) if k < 7 else c.text(d)
    k = d.int(0, 7)
    tree = "" if k < 4 else c.text(d, path=True)
    if k < 7:
        tree = "".join(ch for ch in tree if " " <= ch and ch != "\x7f" and not 0xDC80 <= ord(ch) <= 0xDCFF)
    return {"fill": fill, "strings": strings, "path": path, "name": name, "tree": tree}


def generate(case: dict) -> tuple[dict, str, list[str]] | str:
    """The project's files, its namespace and the input strings; why, when refused."""
    from tensorvm.pycompiler.aot import _namespace, program_files
    from tensorvm.pycompiler.aot.cpp import CompileError
    from tensorvm.pycompiler.escape import EscapeError
    from tensorvm.pycompiler.ir_check import parse
    from tensorvm.pycompiler.literals import quote_string

    values = dict(case["fill"])
    values.update({k: quote_string(v) for k, v in case["strings"].items()})
    text = SKELETON.format(**values)
    try:
        module = parse(text)
    except ValueError as e:  # the IR checker refuses the program: the interpreter would too
        return f"ir: {str(e).splitlines()[0][:60]}"
    meta = {"format": "tensorvm-ir", "version": 1, "note": case["strings"]["S1"]}
    source = Path(case["path"])
    try:
        ns = _namespace(source, case["name"])
        files = program_files(text, meta, source, ns, case["tree"], ("avx2",) if case["tree"] else ())
    except (EscapeError, CompileError) as e:
        return f"{type(e).__name__}: {str(e)[-40:]}"
    table = case["strings"]["TABLE"]
    inputs = (text.split("\n") + [json.dumps(meta, indent=2), ns, f"{ns}-run", case["tree"], "avx2"]
              + list(case["fill"].values()) + list(case["strings"].values()) + [table.replace("{}", "1", 1)]
              + [p.type for f in module.functions for p in f.params] + loader_strings(text))
    return files, ns, inputs


def _compile_flags() -> list[str] | None:
    root = Path(__file__).resolve().parents[2]  # the runtime's headers of this checkout
    if not (root / "vm" / "aot.h").is_file() or not shutil.which("c++"):
        return None
    return ["-std=gnu++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", f"-I{root}", "-I/usr/include/eigen3"]


def compile_check(files: dict, ns: str, flags: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in files.items():
            Path(tmp, name).write_text(text, encoding="utf-8")
        for src in (f"{ns}.cpp", f"{ns}_run.cpp"):
            res = subprocess.run(["c++", *flags, src], cwd=tmp, capture_output=True, text=True, timeout=600)
            if res.returncode:
                raise Violation(f"{src} does not compile:\n{res.stderr[-3000:]}")


class Runner:
    def __init__(self, artifacts: Path):
        self.pool = _pool()
        self.compile = False
        self.artifacts = artifacts
        self.why: dict[str, int] = {}  # refusals by reason
        self.stats = {"cases": 0, "accepted": 0, "refused": 0, "compiled": 0, "marked_strings": 0}

    def one(self, d: Draw, label: str) -> None:
        case = draw_case(d, self.pool)
        self.stats["cases"] += 1
        got = generate(case)
        if isinstance(got, str):
            self.stats["refused"] += 1
            why = got.split(":")[0] if not got.startswith("EscapeError") else got
            self.why[why] = self.why.get(why, 0) + 1
            return
        files, ns, inputs = got
        try:
            counts = check_project(files, ns, inputs)
            self.stats["accepted"] += 1
            self.stats["marked_strings"] += counts["marked_strings"]
            if self.compile:
                compile_check(files, ns, _compile_flags())
                self.stats["compiled"] += 1
        except Violation:
            self.save(label, case, files)
            raise

    def compile_cases(self, n: int, seed: int) -> None:
        """Checks and compiles n accepted cases of the seeded generator (before the fuzz
        loop: seconds each, so outside its time)."""
        if n and _compile_flags() is None:
            print("fuzz_aot: no c++ or no runtime headers here: --compile skipped")
            return
        self.compile, i = True, 0
        try:
            while self.stats["compiled"] < n:
                self.one(Draw(random.Random(f"{seed}:compile:{i}")), f"{seed}-compile-{i}")
                i += 1
        finally:
            self.compile = False
        if n:
            print(f"fuzz_aot: compiled {n} cases (seed {seed})")

    def save(self, label: str, case: dict, files: dict) -> None:
        out = self.artifacts / f"aot-{label}"
        out.mkdir(parents=True, exist_ok=True)
        (out / "case.json").write_text(json.dumps(case, indent=1, ensure_ascii=True))
        for name, text in files.items():
            (out / name).write_text(text, encoding="utf-8", errors="surrogateescape")
        print(f"fuzz_aot: finding written to {out}", file=sys.stderr)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--runs", type=int, default=-1, help="stop after this many cases (-1: no limit)")
    ap.add_argument("--seed", type=int, default=None, help="the seeded loop's seed (default: from the clock)")
    ap.add_argument("--compile", type=int, default=0, metavar="N",
                    help="first compile N accepted cases' C++ (syntax only) of the seeded generator")
    ap.add_argument("--artifacts", default="build/fuzz/artifacts")
    ap.add_argument("--corpus", default="build/fuzz/corpus/aot", help="atheris' corpus directory")
    ap.add_argument("--no-atheris", action="store_true", help="the seeded loop even when atheris is installed")
    ap.add_argument("--replay", metavar="SEED:INDEX|FILE", help="rerun one case of the seeded loop, or an atheris input")
    args = ap.parse_args(argv)
    try:
        import atheris
    except ImportError:
        atheris = None
    use_atheris = atheris is not None and not args.no_atheris and not args.replay
    if use_atheris:  # coverage of the emitter (only: the rest costs time) guides the mutations
        import tensorvm.pycompiler.ir_check  # noqa: F401
        import tensorvm.pycompiler.registry  # noqa: F401
        with atheris.instrument_imports(include=["tensorvm.pycompiler.escape", "tensorvm.pycompiler.aot",
                                                 "tensorvm.pycompiler.aot.cpp"]):
            import tensorvm.pycompiler.aot  # noqa: F401
    runner = Runner(Path(args.artifacts))
    seed = args.seed if args.seed is not None else int(time.time())

    if args.replay and Path(args.replay).is_file():  # an atheris artifact
        import atheris

        runner.one(Draw(fdp=atheris.FuzzedDataProvider(Path(args.replay).read_bytes())), "replay")
        print(f"fuzz_aot: {args.replay} passes ({runner.stats})")
        return 0
    if args.replay:  # SEED:INDEX, or SEED:compile:INDEX (compiled too)
        runner.compile = ":compile:" in args.replay
        runner.one(Draw(random.Random(args.replay)), args.replay.replace(":", "-"))
        print(f"fuzz_aot: {args.replay} passes ({runner.stats})")
        return 0
    try:
        runner.compile_cases(args.compile, seed)
    except Violation as e:
        print(f"fuzz_aot: FINDING in a compiled case of seed {seed}\n{e}", file=sys.stderr)
        return 1
    if use_atheris:
        return _atheris(atheris, runner, args)
    print(f"fuzz_aot: seeded loop, seed {seed}, {args.seconds:g}s (atheris {'off' if atheris else 'not installed'})")
    end, i = time.monotonic() + args.seconds, 0
    while (args.seconds <= 0 or time.monotonic() < end) and (args.runs < 0 or i < args.runs):
        try:
            runner.one(Draw(random.Random(f"{seed}:{i}")), f"{seed}-{i}")
        except Violation as e:
            print(f"fuzz_aot: FINDING in case {seed}:{i} (replay: --replay {seed}:{i})\n{e}", file=sys.stderr)
            return 1
        i += 1
    print(f"fuzz_aot: no findings; stat::number_of_executed_units: {runner.stats['cases']} {json.dumps(runner.stats)}")
    return 0


def _atheris(atheris, runner: Runner, args) -> int:
    def one(data: bytes) -> None:
        runner.one(Draw(fdp=atheris.FuzzedDataProvider(data)), "atheris")
        if runner.stats["cases"] % 1000 == 0:  # (libFuzzer ends the process: no summary at the end)
            print(f"fuzz_aot: {json.dumps(runner.stats)}", file=sys.stderr, flush=True)

    Path(args.corpus).mkdir(parents=True, exist_ok=True)
    Path(args.artifacts).mkdir(parents=True, exist_ok=True)
    flags = [f"-max_total_time={int(args.seconds)}" if args.seconds > 0 else "-max_total_time=0",
             f"-runs={args.runs}", f"-artifact_prefix={args.artifacts}/aot-", "-print_final_stats=1",
             "-max_len=4096", "-len_control=0", "-timeout=60", args.corpus]
    print(f"fuzz_aot: atheris, {args.seconds:g}s")
    atheris.Setup([sys.argv[0], *flags], one)
    try:
        atheris.Fuzz()
    finally:
        print(f"fuzz_aot: {json.dumps(runner.stats)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
