"""`tensorvm compile` on hostile input (issue 25): no text of the input becomes code.

Names: every C++ keyword, every identifier the generated code itself writes (the
templates' locals, its types and namespaces), predefined macros and reserved forms, as
function names, value names and --name. Strings: weight names, emit strings, meta.json
and the program directory's path holding newlines, CR, `*/`, `\\`, quotes, `${...}`,
`$(...)`, `@VAR@`, template placeholders and non-ASCII, each with a command that touches
a file were it ever run. Each program either compiles and builds (one CMake build for
all of them) or is refused at compile time, and no file is touched at configure, build
or run time."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tensorvm import _C
from tensorvm.pycompiler import weights_io
from tensorvm.pycompiler.aot import program_files, runtime_cmake_args
from tensorvm.pycompiler.cli import main as cli_main
from tensorvm.pycompiler.escape import CPP_KEYWORDS, EscapeError, cpp_namespace
from tensorvm.pycompiler.ir_check import parse
from tensorvm.pycompiler.literals import quote_string
from tensorvm.pycompiler.locations import NotInstalledError, get_tensorvm_run

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
from aot_check import CPP_TOKEN, check_project, loader_strings  # noqa: E402

HEADER = "# tensorvm ir 1\n"
META = {"format": "tensorvm-ir", "version": 1}
MACROS = ["linux", "unix", "i386", "NULL", "EOF", "INT64_MIN", "assert", "errno", "stdin", "SIZE_MAX"]
RESERVED_FORMS = ["_x", "__x", "a__b", "_X", "x_", "x__", "v_x", "f_x", "w_x", "op_add", "t_loop_3", "t_layer", "i_1",
                  "s_x", "l_0", "v_0x", "loop_3", "layer"]


def _touch(n: int) -> str:
    return f"touch PWN{n}"  # (PWN: aot_check's marker of input text)


# A payload per place: what ran (at configure, build or run time) before issue 25.
WEIGHTS = [f'w\nstatic inline const int pwn = std::system("{_touch(1)}");\n//', "w_splice\\",
           f'w */ int pwn_c = std::system("{_touch(2)}"); /*', "w\r int PWN3;",
           f'w"); static int pwn_q = std::system("{_touch(4)}"); //', "${CMAKE_COMMAND} $(PWN5) @VAR@ ??/ é\u202e\u2028\x85\t",
           "@SOURCE:cpp_comment@ @NS:namespace@ PWN6"]
TABLE = "tab\n{}\nint PWN7; */\\"
EMITS = [f'e\n"); std::system("{_touch(8)}"); ("', "e\\", "e */ PWN9 /* é \u202e"]
PATHS = [f"model\nexecute_process(COMMAND {_touch(10)})\nadd_custom_target(pwn ALL COMMAND {_touch(11)})\n"
         f"# $({_touch(12)}) `{_touch(13)}` ${{CMAKE_COMMAND}} @SOURCE:cmake_comment@ \"q\" \\ * é\u202e.tvm",
         f"m\rexecute_process(COMMAND {_touch(14)})\r#\\\nstatic const int pwn = std::system(\"{_touch(15)}\");\n#pragma x\n"]


def _code_identifiers(text: str) -> set[str]:
    return {m.group(0) for m in CPP_TOKEN.finditer(text) if m.lastgroup == "ident"}


def _generated_names() -> list[str]:
    """Every identifier the generated code of a plain program writes (the templates', the
    emitter's own, the runtime's and the C++ library's), keywords, macros, reserved forms."""
    text = HEADER + ("def g(x: Tensor, w: Tensor, layer: int) -> Tensor:\n    t = param(\"a.{}\", layer)\n"
                     "    y = add(x, t)\n    return y\n\n"
                     "def h() -> Tensor:\n    z = zeros([2], dtype=\"f32\")\n    w = param(\"b\")\n"
                     "    a = g(z, w, 0)\n    b = g(a, w, 1)\n    e = emit(\"s\", b)\n    return b\n")
    files = program_files(text, META, Path("/p.tvm"), "plain")
    names = set(CPP_KEYWORDS) | set(MACROS) | set(RESERVED_FORMS)
    for name, t in files.items():
        if name.endswith((".cpp", ".h")):
            names |= _code_identifiers(t)
    return sorted(names - {"plain", "plain_run"})


def _loads(text: str) -> bool:
    """Whether compile takes `text`: the C++ loader and the Python checker both do (else
    it is refused, with a message naming program.py)."""
    outcomes = []
    for load in (lambda: _C.Program.from_memory(text, None, ""), lambda: parse(text)):
        try:
            load()
            outcomes.append(True)
        except Exception as e:  # noqa: BLE001
            assert "program.py" in str(e), e
            outcomes.append(False)
    return all(outcomes)


def _split(names: list[str]) -> tuple[list[str], list[str]]:
    """The names the IR takes as a function's, and as a value's (others: refused at load)."""
    fns = [n for n in names if _loads(HEADER + f"def {n}(x: Tensor) -> Tensor:\n    y = add(x, 1.0)\n    return y\n")]
    values = [n for n in names if _loads(HEADER + f"def g(x: Tensor) -> Tensor:\n    {n} = add(x, 1.0)\n    return {n}\n\n"
                                         f"def h({n}: Tensor) -> Tensor:\n    y = add({n}, 1.0)\n    return y\n")]
    return fns, values


def _program(fns: list[str], values: list[str]) -> str:
    """Every construct the emitter writes, with `fns` as the functions' names (the first
    is the entry, taking no arguments) and `values` as the functions' values (each used)."""
    entry, layer, cnd, body, pick, other, *chain = fns
    v = iter(values * 4)
    out = [HEADER.rstrip("\n")]
    a, b, i = next(v), next(v), next(v)
    t, y, z = next(v), next(v), next(v)
    out += [f"def {layer}({a}: Tensor, {b}: Tensor, {i}: int) -> Tensor:", f"    {t} = param({quote_string(TABLE)}, {i})",
            f"    {y} = add({a}, {t})", f"    {z} = add({y}, {b})", f"    return {z}", ""]
    a, b, c = next(v), next(v), next(v)
    out += [f"def {cnd}({a}: int, {b}: Tensor) -> bool:", f"    {c} = lt({a}, 2)", f"    return {c}", ""]
    a, b, c, d = next(v), next(v), next(v), next(v)
    out += [f"def {body}({a}: int, {b}: Tensor) -> tuple[int, Tensor]:", f"    {c} = add({a}, 1)",
            f"    {d} = add({b}, 0.5)", f"    return {c}, {d}", ""]
    a, b = next(v), next(v)
    out += [f"def {pick}({a}: Tensor, {b}: Tensor) -> Tensor:", f"    return {a}", ""]
    a, b = next(v), next(v)
    out += [f"def {other}({a}: Tensor, {b}: Tensor) -> Tensor:", f"    return {b}", ""]
    for f, g in zip(chain, chain[1:] + [None]):  # each calls the next: all of them run
        a, b, c = next(v), next(v), next(v)
        out += [f"def {f}({a}: Tensor) -> Tensor:", f"    {b} = add({a}, 1.0)"]
        out += [f"    {c} = {g}({b})", f"    return {c}", ""] if g else [f"    return {b}", ""]
    names = iter(values)
    prev = next(names)
    body_lines = [f'    {prev} = zeros([2], dtype="f32")']

    def bind(expr: str) -> str:
        nonlocal prev
        n = next(names)
        body_lines.append(f"    {n} = {expr}")
        prev = n
        return n

    for w in WEIGHTS:
        bind(f"add({prev}, {bind(f'param({quote_string(w)})')})")
    for s in EMITS:  # (an emit's result is left unread)
        x = prev
        bind(f"emit({quote_string(s)}, {x})")
        prev = x
    table_w = bind(f"param({quote_string(TABLE)}, 1)")
    bind(f"{layer}({bind(f'{layer}({prev}, {table_w}, 0)')}, {table_w}, 1)")
    bind(f"{chain[0]}({prev})")
    flag = bind("lt(0, 1)")
    x = prev
    bind(f"cond({flag}, {pick}, {other}, {x}, {x})")
    i0 = bind("add(0, 0)")
    start = prev
    k, acc = next(names), next(names)
    body_lines.append(f"    {k}, {acc} = while_loop({cnd}, {body}, {i0}, {start})")
    prev = acc
    out += [f"def {entry}() -> Tensor:"] + body_lines + [f"    return {prev}", ""]
    return "\n".join(out)


def _write_program(path: Path, text: str) -> None:
    path.mkdir()
    (path / "program.py").write_text(text)
    (path / "meta.json").write_text(json.dumps({**META, "note": WEIGHTS[0] + PATHS[0]}))
    tensors = {w: np.full(2, k + 1, np.float32) for k, w in enumerate(WEIGHTS)}
    tensors.update({TABLE.replace("{}", str(k)): np.full(2, 10 * k, np.float32) for k in (0, 1)})
    weights_io.write(path / "weights.safetensors", tensors)


def _no_touched_files(tmp: Path) -> None:
    touched = [str(p) for p in tmp.rglob("PWN*")]
    assert not touched, f"input text ran: {touched}"


def _inputs(prog: Path, text: str, ns: str) -> list[str]:
    """The strings of the input (for aot_check: what a literal carrying input may hold)."""
    meta = json.loads((prog / "meta.json").read_text())
    module = parse(text)
    return (text.split("\n") + [json.dumps(meta, indent=2), ns, f"{ns}-run"] + WEIGHTS + EMITS
            + [TABLE, TABLE.replace("{}", "1", 1)] + [f.name for f in module.functions]
            + [x for f in module.functions for p in f.params for x in (p.name, p.type)] + loader_strings(text))


def test_issue_examples_stay_inert(tmp_path):
    """The three reports of issue 25 at the text level: a weight name with a newline, a
    directory name with a newline and a CMake command, an IR function named `f`."""
    text = HEADER + (f"def f() -> Tensor:\n    w = param({quote_string(WEIGHTS[0])})\n    return w\n\n"
                     "def run(c: Tensor) -> Tensor:\n    in_ = add(c, 1.0)\n    return in_\n")
    prog = tmp_path / PATHS[0]
    _write_program(prog, text)
    assert cli_main(["compile", str(prog), "-o", str(tmp_path / "out")]) == 0
    ns = next(p.stem for p in (tmp_path / "out").glob("*.h"))
    files = {p.name: p.read_text() for p in (tmp_path / "out").iterdir()}
    check_project(files, ns, _inputs(prog, text, ns))
    # the function f never meets Session::run's local f
    assert re.search(r"^vm::Value f_f\(Ctx& c\)", files[f"{ns}.cpp"], re.M)
    assert "case 0: return {f_f(c)};" in files[f"{ns}.cpp"]


@pytest.mark.parametrize("name", ["x\ny", "x\ry", "x*/", "x\\", 'x"', "x'", "x${X}", "x$(id)", "x@VAR@", "é", "x y",
                                  "int", "class", "std", "vm", "main", "linux", "size_t", "INT64_MIN", "tensorvm", "test"])
def test_compile_refuses_a_name_it_cannot_write(tmp_path, capsys, name):
    prog = tmp_path / "p.tvm"
    _write_program(prog, HEADER + "def g(x: Tensor) -> Tensor:\n    return x\n")
    assert cli_main(["compile", str(prog), "-o", str(tmp_path / "out"), "--name", name]) == 1
    assert "--name" in capsys.readouterr().err and not (tmp_path / "out").exists()


def _namespace_sources(tmp: Path, names: list[str]) -> tuple[list[str], str]:
    """The generated files of a small program under each of `names` that --name takes,
    checked at the text level, and one C++ file including them all (each NAME_run.cpp's
    main renamed) for the build to compile."""
    text = HEADER + "def g(x: Tensor) -> Tensor:\n    w = param(\"w\")\n    y = add(x, w)\n    return y\n"
    taken, lines = [], []
    for name in names:
        try:
            cpp_namespace(name)
        except EscapeError:
            continue
        files = program_files(text, META, Path("/p.tvm"), name)
        check_project(files, name, text.split("\n") + [name, f"{name}-run", "w", "x", "Tensor", "g",
                                                       json.dumps(META, indent=2)])
        d = tmp / f"ns_{len(taken)}"
        d.mkdir()
        for fname, t in files.items():
            (d / fname).write_text(t)
        lines += [f'#include "{d}/{name}.cpp"', f"#define main main_{len(taken)}", f'#include "{d}/{name}_run.cpp"',
                  "#undef main"]
        taken.append(name)
    return taken, "\n".join(lines) + "\n"


def test_hostile_names_build_and_nothing_runs(tmp_path):
    """Two programs (every generated name as a function's name in one and as a value's in
    the other), under the hostile directory names, compiled and built in one CMake build
    with every --name compile takes; both run as the interpreter does; no payload ran."""
    if not shutil.which("cmake"):
        pytest.skip("cmake is not installed")
    try:
        args = runtime_cmake_args(tmp_path)
        interp = get_tensorvm_run()
    except NotInstalledError as e:
        if os.environ.get("CI"):
            pytest.fail(str(e))
        pytest.skip(str(e))
    names = _generated_names()
    fns, values = _split(names)
    assert {"f", "c", "function", "frame", "on_emit", "main", "delete", "run", "Ctx", "lit", "linux"} <= set(fns)
    half = len(fns) // 2
    entries = []
    for k, (fn_names, value_names) in enumerate(((fns[:half], [n for n in values if n not in fns[:half]]),
                                                 (fns[half:], [n for n in values if n not in fns[half:]]))):
        text = _program(fn_names, value_names)
        assert {n for f in parse(text).functions for s in f.body for n in getattr(s, "targets", ())} | \
            {p.name for f in parse(text).functions for p in f.params} >= set(value_names)
        prog = tmp_path / PATHS[k]
        _write_program(prog, text)
        out = tmp_path / f"out{k}"
        assert cli_main(["compile", str(prog), "-o", str(out)] + (["--name", "run"] if k else [])) == 0
        ns = "run" if k else next(p.stem for p in out.glob("*.h"))
        check_project({p.name: p.read_text() for p in out.iterdir()}, ns, _inputs(prog, text, ns))
        entries.append((prog, out, ns, fn_names[0]))
    taken, namespaces = _namespace_sources(tmp_path, names)
    assert {"c", "f", "Program", "Session", "lit", "aot", "kSource", "signatures"} <= set(taken)
    wrap = tmp_path / "wrap"
    wrap.mkdir()
    (wrap / "namespaces.cpp").write_text(namespaces)
    (wrap / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(hostile LANGUAGES CXX)\n"
        + "".join(f'add_subdirectory("${{DIR{k}}}" p{k})\n' for k in range(2))
        + "find_package(tensorvm REQUIRED)\nadd_library(namespaces OBJECT namespaces.cpp)\n"
        "target_link_libraries(namespaces PRIVATE tensorvm::cli)\n"
        "target_compile_options(namespaces PRIVATE -O0 -Wall -Wextra)\n")
    if shutil.which("ccache"):
        args.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    cwd = tmp_path / "cwd"  # where a payload's relative `touch` would land
    cwd.mkdir()
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    for cmd in (["cmake", "-S", str(wrap), "-B", str(tmp_path / "build"), *generator, "-DCMAKE_BUILD_TYPE=Release",
                 *[f"-DDIR{k}={e[1]}" for k, e in enumerate(entries)], *args],
                ["cmake", "--build", str(tmp_path / "build"), "-j2"]):
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=3000, cwd=cwd)
        assert res.returncode == 0, f"{cmd}\n{res.stdout[-5000:]}\n{res.stderr[-5000:]}"
        assert "warning" not in (res.stdout + res.stderr).lower(), res.stdout[-5000:] + res.stderr[-5000:]
        _no_touched_files(tmp_path)
    for k, (prog, out, ns, entry) in enumerate(entries):
        exe = tmp_path / "build" / f"p{k}" / f"{ns}-run"
        a = subprocess.run([str(exe), str(prog), entry], capture_output=True, text=True, timeout=600, cwd=cwd)
        b = subprocess.run([interp, str(prog), entry], capture_output=True, text=True, timeout=600, cwd=cwd)
        assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
        assert a.stdout == b.stdout and a.stdout
    _no_touched_files(tmp_path)


def test_a_namespace_that_is_some_other_macro_stops_at_the_header(tmp_path):
    """A --name of no macro form that a header defines all the same (glibc's M_PIf): the
    build's first error names it, before the errors of its expansion."""
    if not shutil.which("c++"):
        pytest.skip("no C++ compiler")
    text = HEADER + "def g(x: Tensor) -> Tensor:\n    return x\n"
    for fname, t in program_files(text, META, Path("/p.tvm"), "M_PIf").items():
        (tmp_path / fname).write_text(t)
    res = subprocess.run(["c++", "-std=gnu++17", "-fsyntax-only", f"-I{ROOT}", "-I/usr/include/eigen3", "M_PIf.cpp"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    errors = [line for line in res.stderr.splitlines() if "error" in line]
    assert res.returncode != 0 and errors, res.stderr[-3000:]
    assert "the namespace M_PIf is a macro of the headers above" in errors[0], errors[0]


def test_ir_lines_are_the_lexers(tmp_path):
    """The lines compiled in for errors are the ones the IR's lexer counts (the loader's):
    a string literal may hold U+2028 or U+0085 raw, which str.splitlines() would split at."""
    text = HEADER + "def g(x: Tensor) -> Tensor:\n    e = emit(\"a\u2028b\u0085c\", x)\n    return x\n"
    prog = tmp_path / "p.tvm"
    _write_program(prog, text)
    assert cli_main(["compile", str(prog), "-o", str(tmp_path / "out"), "--name", "p"]) == 0
    cpp = (tmp_path / "out" / "p.cpp").read_text()
    assert "    {3, 0, vm::Instr::Kind::Emit, " in cpp  # the emit, on line 3
    assert 'kSource{"program.py", kFunctions, 1, kSites, 1, kNames}' in cpp
