"""`tensorvm compile PROGRAM -o DIR`: a program as C++ source that builds into a static
library (`run(name, inputs)`) and a command line with tensorvm-run's interface
(docs/aot.md), linked with the installed runtime or, with --selective, with a runtime
built from the source tree holding only the ops the program calls (ops.txt).

The C++ is the IR, line for line (cpp.py); this module lays out the files.
"""
from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from ..selective import OPS_FILE, builtin_ops, check_kernel_variants, device_runtime_settings, find_source_tree
from .cpp import CompileError, FunctionWriter, Literals, WeightNames
from ..escape import EscapeError, cmake_quoted, cpp_comment, cpp_ident, cpp_namespace, cpp_string, render

__all__ = ["CompileError", "compile_program", "runtime_cmake_args"]

_TEMPLATES = Path(__file__).resolve().parent / "templates"


def _namespace(path: Path, name: Optional[str]) -> str:
    """--name as given (checked), else one made from the directory's name: its letters,
    digits and single underscores (64 at most: the files' names hold it), under `p_` where
    that alone would be refused."""
    if name is not None:
        return cpp_namespace(name)
    n = re.sub(r"[^A-Za-z0-9]+", "_", path.name.removesuffix(".tvm"))[:64].strip("_") or "program"
    try:
        return cpp_namespace(n)
    except EscapeError:
        return cpp_namespace("p_" + n)


def compile_program(program, out_dir, name: Optional[str] = None, selective: bool = False, source=None,
                    kernel_variants: Sequence[str] = ()) -> dict[str, Path]:
    """Writes the C++ of `program` (a directory or a loaded tensorvm.Program) into
    out_dir, which is replaced as a whole (written aside, then renamed). Returns the files.

    `selective`: the CMake project builds the runtime from the tensorvm source tree
    (`source`, default the one beside this package) with only the program's ops and
    `kernel_variants` (besides scalar; default all the target's), sized for a device.
    Otherwise it links the installed runtime, unless configured with
    -DTENSORVM_SOURCE_DIR=... ."""
    from ..program import Program, load

    if (source or kernel_variants) and not selective:
        raise CompileError("compile: --source and --kernel-variants choose the runtime a --selective build compiles")
    check_kernel_variants(kernel_variants)
    tree = str(find_source_tree(source)) if selective else ""
    try:
        cmake_quoted(tree)
    except EscapeError as e:
        raise CompileError(f"--source: {e}") from None
    src = Path(program.path if isinstance(program, Program) else program)
    ns = _namespace(src, name)
    prog = program if isinstance(program, Program) else load(program)  # the C++ loader checks it first
    prog.session  # noqa: B018  binds every call: a program that would not load does not compile
    files = program_files(prog.ir, prog.meta, src, ns, tree, kernel_variants)
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for fname, text in files.items():
            (tmp / fname).write_text(text, encoding="utf-8")
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            out.rename(old / out.name)
            tmp.rename(out)
            shutil.rmtree(old)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {fname: out / fname for fname in files}


def program_files(text: str, meta: dict, source: Path, ns: str, source_tree: str = "",
                  kernel_variants: Sequence[str] = ()) -> dict[str, str]:
    """The files of the generated project, by name: the program (its IR `text`, its
    meta.json and its directory `source`) as namespace `ns`; `source_tree` non-empty: a
    --selective build from it with `kernel_variants`."""
    code, used_ops = program_cpp(text, ns, json.dumps(meta, indent=2), str(source))
    builtin = builtin_ops()
    app_ops = sorted(op for op in used_ops if op not in builtin)
    ops = sorted(op for op in used_ops if op in builtin)
    return {
        f"{ns}.h": _render("program.h", ns=ns, source=str(source)),
        f"{ns}.cpp": code,
        f"{ns}_run.cpp": _render("program_run.cpp", ns=ns, source=str(source), run_name=f"{ns}-run"),
        OPS_FILE: "\n".join([f"# The built-in ops {ns}.cpp calls ({len(ops)} of {len(builtin)}), for "
                             "-DTENSORVM_SELECTED_OPS.", "# Written by tensorvm compile."]
                            + [f"# {op}: the app's own op (vm::register_op), not built in" for op in app_ops]
                            + ops) + "\n",
        "CMakeLists.txt": _render("CMakeLists.txt", ns=ns, source=str(source), source_tree=source_tree,
                                  code={"device_runtime": "\n".join("  " + line for line in device_runtime_settings(
                                      f"${{CMAKE_CURRENT_LIST_DIR}}/{OPS_FILE}", kernel_variants))}),
    }


def _render(template: str, code: Optional[dict[str, str]] = None, **values: str) -> str:
    return render((_TEMPLATES / template).read_text(), code, **values)


def resolve(text: str) -> list[dict]:
    """The program as the interpreter's loader resolves it (pycompiler/bindings/resolved.cpp);
    a program it refuses is a CompileError with its message."""
    from ... import _C

    try:
        return _C.resolve(text)
    except RuntimeError as e:
        raise CompileError(str(e)) from None


def program_cpp(text: str, ns: str, meta_json: str, source: str) -> tuple[str, list[str]]:
    """The C++ of the program, and the ops it calls."""
    ns = cpp_namespace(ns)
    functions = resolve(text)
    # (lines as the IR's lexer counts them: splitlines() also splits at U+2028, U+2029 and
    # U+0085, which a string literal may hold, and would shift every later line in errors)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lits, weights, used_ops = Literals(), WeightNames(), {}
    fn_names = [cpp_ident("f", f["name"]) for f in functions]
    writer = FunctionWriter(functions, lines, lits, weights, fn_names, used_ops)
    bodies = []
    for f in functions:
        bodies.extend(writer.write(f))
        bodies.append("")

    out = [f"// {ns}: {cpp_comment(source)} compiled to C++ by `tensorvm compile` (docs/aot.md). Generated: edit the IR,",
           "// not this file. Each function is the IR function of the same name, line for line; the",
           "// number after `c` in each call is the line of program.py it came from.",
           f'#include "{ns}.h"', "", "#include <array>", "#include <limits>", "#include <utility>", "",
           f"namespace {ns} {{", "", "namespace aot = vm::aot;", "",
           "namespace lit {  // the program's literals, built once"]
    out += lits.defs
    out += ["}  // namespace lit", "",
            "// Every op the program calls, bound by name when the program is loaded.",
            "struct Ops {"]
    out += [f"  aot::Op {member}{{{cpp_string(op)}}};" for op, member in sorted(used_ops.items())]
    out += ["};", "",
            "// Every weight the program names, bound by name from weights.safetensors.",
            "struct Weights {",
            "  Weights(const std::string& path, const vm::LoadOptions& options)"]
    inits = ["file(path, options)"] + [f"{m}(file.get({cpp_string(n)}))" for n, m in weights.singles.items()] + \
            [f"{m}(file.table({cpp_string(n)}))" for n, m in weights.tables.items()]
    if len(inits) == 1:  # a program without weights reads no file
        out[-1] = "  Weights(const std::string& /*path*/, const vm::LoadOptions& /*options*/) {}"
    else:
        out += [("      : " if i == 0 else "        ") + init + ("," if i + 1 < len(inits) else " {}")
                for i, init in enumerate(inits)]
        out += ["  aot::WeightsFile file;  // the mapping the tensors below view"]
    out += [f"  vm::Value {m};  // {cpp_comment(n)}" for n, m in weights.singles.items()]
    out += [f"  aot::WeightsFile::Table {m};  // {cpp_comment(n)}" for n, m in weights.tables.items()]
    out += ["};", "", "namespace {", "",
            "struct Ctx : aot::Context {",
            "  const Ops& op;",
            "  const Weights& w;",
            "};", ""]
    out += _source(functions)
    out += [writer.declaration(f) + ";" for f in functions]
    out += [""] + bodies
    out += ["}  // namespace", ""]
    out += _api(functions, fn_names, ns, meta_json)
    out += [f"}}  // namespace {ns}", ""]
    return "\n".join(out), sorted(used_ops)


_KINDS = {"op": "Kernel", "call": "Call", "while_loop": "WhileLoop", "cond": "Cond", "emit": "Emit",
          "param": "ParamIndexed"}


def _source(functions: list[dict]) -> list[str]:
    """What errors and hooks name (vm/aot.h Source): each function's name and line, and
    each instruction's line, function, kind, callee, statement as the loader prints it,
    and its results' names. (Each table ends in an entry not counted: none is empty.)"""
    names: list[str] = []
    sites = []
    for i, f in enumerate(functions):
        for ins in f["code"]:
            if ins["kind"] == "return":
                continue
            first = len(names)
            names += [f["reg_names"][r] for r in ins["outs"]]
            sites.append(f"    {{{ins['line']}, {i}, vm::Instr::Kind::{_KINDS[ins['kind']]}, {cpp_string(ins['callee'])}, "
                         f"{cpp_string(ins['text'])}, {ins['fn_a']}, {ins['fn_b']}, {first}, {len(names) - first}}},")
    out = ["// The program as errors (\"at program.py:12 in encode: ...\") and hooks name it: its functions,",
           "// its instructions (line, function, kind, callee, statement, functions called, results) and",
           "// their results' names.",
           "const aot::SourceFunction kFunctions[] = {"]
    out += [f"    {{{cpp_string(f['name'])}, {f['line']}}}," for f in functions]
    out += ["    {nullptr, 0}};", "const aot::SourceSite kSites[] = {"]
    out += sites
    out += ["    {0, 0, vm::Instr::Kind::Return, nullptr, nullptr, 0, 0, 0, 0}};", "const char* const kNames[] = {"]
    out += [f"    {cpp_string(n)}," for n in names]
    out += ["    nullptr};",
            f'const aot::Source kSource{{"program.py", kFunctions, {len(functions)}, kSites, {len(sites)}, kNames}};', ""]
    return out


def _api(functions: list[dict], fn_names: list[str], ns: str, meta_json: str) -> list[str]:
    # A table of C strings read once at startup: as initializer lists of std::string,
    # a program with many options compiled to 66 KB of constructor code.
    out = ["const std::vector<aot::Signature>& signatures() {",
           "  // each function: its name, then each parameter's name and type, then nullptr",
           "  static const char* const table[] = {"]
    for f in functions:
        items = [cpp_string(f["name"])] + [cpp_string(x) for p in zip(f["params"], f["param_types"]) for x in p] + ["nullptr"]
        out.append("      " + ", ".join(items) + ",")
    out += ["      nullptr};",
            "  static const std::vector<aot::Signature> all = aot::signatures_from(table);",
            "  return all;", "}", "",
            "const std::string& meta_json() {",
            f"  static const std::string meta = {cpp_string(meta_json)};",
            "  return meta;", "}", "",
            "std::shared_ptr<const Program> Program::load(const std::string& dir, const vm::LoadOptions& options) {",
            "  std::shared_ptr<Program> p(new Program());",
            "  p->ops_ = std::make_unique<const Ops>();",
            '  p->weights_ = std::make_unique<const Weights>(dir + "/weights.safetensors", options);',
            '  p->source_file_ = dir + "/program.py";',
            "  p->source_ = kSource;",
            "  p->source_.filename = p->source_file_.c_str();",
            "  return p;", "}", "",
            "Program::~Program() = default;", "",
            "Session::Session(std::shared_ptr<const Program> program, vm::SessionOptions options)",
            "    : program_(std::move(program)), runtime_(options) {",
            '  if (!program_) vm::fail("Session: no program");', "}", "",
            "std::vector<vm::Value> Session::run(const std::string& function, std::vector<vm::Value> in, vm::EmitCallback on_emit) {",
            f"  const size_t f = aot::find(signatures(), function, {cpp_string(ns)});",
            "  vm::check_inputs(function, signatures()[f].param_names, signatures()[f].param_types, in);",
            "  Ctx c{runtime_.context(std::move(on_emit), &program_->source()), program_->ops(), program_->weights()};",
            "  aot::Runtime::Engaged engaged(runtime_.threads());",
            "  switch (f) {"]
    for i, f in enumerate(functions):
        args = "".join(f", std::move(in[{j}])" for j in range(len(f["params"])))
        call = f"{fn_names[i]}(c{args})"
        n = len(f["return_types"])
        if n == 0:
            body = f"{call}; return {{}};"
        elif n == 1:
            body = f"return {{{call}}};"
        else:
            body = f"{{ auto r = {call}; return {{std::make_move_iterator(r.begin()), std::make_move_iterator(r.end())}}; }}"
        out.append(f"    case {i}: {body}")
    out += ["  }", "  return {};", "}", "",
            "std::vector<vm::Value> Session::run_named(const std::string& function,",
            "                                          const std::vector<std::pair<std::string, vm::Value>>& named,",
            "                                          vm::EmitCallback on_emit) {",
            f"  const size_t f = aot::find(signatures(), function, {cpp_string(ns)});",
            "  return run(function, aot::inputs_by_name(signatures()[f], named), std::move(on_emit));", "}", "",
            "std::vector<vm::Value> run(Session& session, const std::string& function, std::vector<vm::Value> inputs) {",
            "  return session.run(function, std::move(inputs));", "}", ""]
    return out


def runtime_cmake_args(scratch) -> list[str]:
    """CMake arguments that find the runtime this Python package belongs to: a development
    build (.ci/dev-build) installed into `scratch`/prefix, or the installed package's CMake
    directory. Raises NotInstalledError when there is neither."""
    import os
    import subprocess

    from ... import _C
    from ..locations import get_cmake_dir

    build = Path(os.path.realpath(_C.__file__)).parent
    if (build / "CMakeCache.txt").is_file():
        prefix = Path(scratch) / "prefix"
        subprocess.run(["cmake", "--install", str(build), "--prefix", str(prefix), "--component", "dev"], check=True,
                       capture_output=True, timeout=300)
        return [f"-DCMAKE_PREFIX_PATH={prefix}"]
    return [f"-Dtensorvm_DIR={get_cmake_dir()}"]
