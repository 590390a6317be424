"""Lexer-level checks of the files `tensorvm compile` writes (NAME.cpp, NAME.h, NAME_run.cpp,
CMakeLists.txt): input text may reach them only through pycompiler/escape.py, so none of it
can be code. Shared by fuzz_aot.py and tests/python/test_aot_hostile.py.

The input carries markers (MARKER followed by digits) in every name, literal and path. A
generated file passes when:
- it is ASCII with no control characters but newlines, except UTF-8 inside a CMake quoted
  argument (a --source path), and no line ends in a backslash (a C++ line splice);
- a marker is never a token of code: it appears in a comment, in a string literal or
  quoted argument that decodes to exactly one of the input strings, or inside a program-
  derived identifier (KIND_..., escape.cpp_ident) or the namespace;
- comments are single lines; C++ has no raw or prefixed literals and its preprocessor
  lines are the templates' #include / #pragma once; CMake has only the templates' commands
  and no variable reference in a quoted argument that carries input.
"""
from __future__ import annotations

import re

MARKER = "PWN"
MARKED = re.compile(MARKER + r"\d+")
PREFIXED = re.compile(r"(v|f|w|op|t|i|s|l)_[A-Za-z0-9_]*")
CMAKE_COMMANDS = {"cmake_minimum_required", "project", "set", "if", "else", "endif", "add_subdirectory",
                  "find_package", "add_library", "target_include_directories", "target_link_libraries",
                  "target_compile_options", "add_executable", "target_link_options"}
CPP_DIRECTIVE = re.compile(r'#(?:pragma once|include <[a-z_/.]+>|include "(?:vm|cli)/[a-z_/]+\.h"|endif|include "(\w+)\.h"'
                           r'|ifdef (\w+)|error "the namespace (\w+) is a macro[^"\n]*")')


class Violation(AssertionError):
    pass


def _fail(fname: str, line: int, what: str, text: str = "") -> None:
    raise Violation(f"{fname}:{line}: {what}" + (f": {text[:200]!r}" if text else ""))


def _check_chars(fname: str, data: str, allow_utf8_spans=()) -> None:
    for m in re.finditer(r"[^\n\x20-\x7e]", data):
        if ord(m.group(0)) >= 0x80 and any(a <= m.start() < b for a, b in allow_utf8_spans):
            continue
        _fail(fname, data.count("\n", 0, m.start()) + 1, f"character {m.group(0)!r} outside printable ASCII")


def _decode_cpp_string(body: str) -> bytes:
    out, i = bytearray(), 0
    simple = {"n": 10, "t": 9, "r": 13, "\\": 92, '"': 34, "'": 39, "?": 63, "a": 7, "b": 8, "f": 12, "v": 11}
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ord(ch))
            i += 1
            continue
        e = body[i + 1]
        if e in simple:
            out.append(simple[e])
            i += 2
        elif e in "01234567":
            j = i + 1
            while j < len(body) and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(int(body[i + 1:j], 8) & 0xFF)
            i = j
        elif e == "x":
            j = i + 2
            while j < len(body) and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(body[i + 2:j], 16) & 0xFF)
            i = j
        else:
            raise ValueError(f"unknown escape \\{e}")
    return bytes(out)


def _marked_literal(fname: str, line: int, decoded: bytes, allowed: set[bytes], kind: str) -> None:
    if MARKER.encode() in decoded and decoded not in allowed:
        _fail(fname, line, f"{kind} carries input but decodes to none of the input strings", decoded.decode("utf-8", "replace"))


CPP_TOKEN = re.compile(r"""
  (?P<nl>\n) | (?P<ws>[ \t]+) | (?P<line_comment>//[^\n]*)
| (?P<block_comment>/\*(?:[^*\n]|\*(?!/))*\*/)
| (?P<string>"(?:[^"\\\n]|\\[^\n])*")
| (?P<ident>[A-Za-z_][A-Za-z0-9_]*) | (?P<directive>\#[^\n]*) | (?P<other>.)""", re.X)


def check_cpp(fname: str, data: str, ns: str, allowed: set[bytes]) -> dict:
    """Checks one C++ file; returns counts of what it saw."""
    _check_chars(fname, data)
    splice = re.search(r"\\[ \t]*\n", data)
    if splice:
        _fail(fname, data.count("\n", 0, splice.start()) + 1, "a line splice")
    line, at_line_start, prev = 1, True, None
    seen = {"strings": 0, "comments": 0, "marked_strings": 0}
    for m in CPP_TOKEN.finditer(data):
        kind, tok = m.lastgroup, m.group(0)
        if kind == "nl":
            line += 1
            at_line_start = True
            continue
        if kind == "ws":
            continue
        start_of_line, at_line_start = at_line_start, False
        if kind == "directive":
            d = CPP_DIRECTIVE.fullmatch(tok)
            if not start_of_line or not d or any(g not in (None, ns) for g in d.groups()):
                _fail(fname, line, "a preprocessor line the templates do not write", tok)
        elif kind in ("line_comment", "block_comment"):
            seen["comments"] += 1
        elif kind == "string":
            if prev is not None and prev.lastgroup == "ident" and prev.end() == m.start():
                _fail(fname, line, "a prefixed or raw literal", data[prev.start():m.end()])
            decoded = _decode_cpp_string(tok[1:-1])
            seen["strings"] += 1
            seen["marked_strings"] += MARKER.encode() in decoded
            _marked_literal(fname, line, decoded, allowed, "a string literal")
        elif kind == "ident":
            if MARKER in tok and tok != ns and not PREFIXED.fullmatch(tok):
                _fail(fname, line, "input text as code", tok)
        elif tok == '"':
            _fail(fname, line, "an unterminated string literal", data[m.start():m.start() + 80])
        elif tok == "'":
            _fail(fname, line, "a character literal (the templates write none)", data[m.start():m.start() + 40])
        elif tok == "@":
            _fail(fname, line, "an '@' in code (a placeholder left unfilled?)", data[m.start():m.start() + 40])
        elif tok == "/" and data.startswith("/*", m.start()):
            _fail(fname, line, "a block comment spanning lines or unclosed", data[m.start():m.start() + 80])
        prev = m
    return seen


def _cmake_quoted_spans(data: str) -> list[tuple[int, int]]:
    spans, i, n = [], 0, len(data)
    while i < n:
        if data[i] == "#":
            end = data.find("\n", i)
            i = end if end >= 0 else n
        elif data[i] == '"':
            j = i + 1
            while j < n and data[j] != '"':
                j += 2 if data[j] == "\\" else 1
            spans.append((i, j + 1))
            i = j + 1
        else:
            i += 1
    return spans


def _decode_cmake_quoted(fname: str, line: int, body: str, marked: bool) -> bytes:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            e = body[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r", ";": "\\;"}.get(e, e))
            i += 2
            continue
        if marked and (ch == "$" or ch == "@"):
            _fail(fname, line, "an unescaped variable reference in a quoted argument that carries input", body)
        out.append(ch)
        i += 1
    return "".join(out).encode("utf-8")


def check_cmake(fname: str, data: str, ns: str, allowed: set[bytes]) -> dict:
    spans = _cmake_quoted_spans(data)
    _check_chars(fname, data, spans)
    i, line, n = 0, 1, len(data)
    depth = 0
    seen = {"commands": 0, "comments": 0, "marked_args": 0}
    word = re.compile(r"[^\s()#\"]+")
    expect_command = True
    while i < n:
        ch = data[i]
        if ch == "\n":
            line += 1
            i += 1
            continue
        if ch in " \t":
            i += 1
            continue
        if ch == "#":
            if re.match(r"#\[=*\[", data[i:]):
                _fail(fname, line, "a bracket comment", data[i:i + 40])
            end = data.find("\n", i)
            i = end if end >= 0 else n
            seen["comments"] += 1
            continue
        if ch == '"':
            j = i + 1
            while j < n and data[j] != '"':
                j += 2 if data[j] == "\\" else 1
            body = data[i + 1:j]
            decoded = _decode_cmake_quoted(fname, line, body, MARKER in body)
            seen["marked_args"] += MARKER.encode() in decoded
            _marked_literal(fname, line, decoded, allowed, "a quoted argument")
            line += body.count("\n")
            i = j + 1
            continue
        if ch == "(":
            depth += 1
            i += 1
            continue
        if ch == ")":
            depth -= 1
            if depth == 0:
                expect_command = True
            i += 1
            continue
        m = word.match(data, i)
        tok = m.group(0)
        if re.match(r"\[=*\[", tok):
            _fail(fname, line, "a bracket argument", tok)
        if depth == 0:
            if not expect_command or tok not in CMAKE_COMMANDS:
                _fail(fname, line, "a command the template does not write", tok)
            seen["commands"] += 1
            expect_command = False
        elif MARKER in tok and tok not in (ns, f"{ns}-run", f"{ns}.cpp", f"{ns}_run.cpp"):
            _fail(fname, line, "input text as an unquoted argument", tok)
        if "@" in tok:
            _fail(fname, line, "an '@' in an unquoted argument (a placeholder left unfilled?)", tok)
        i = m.end()
    if depth:
        _fail(fname, line, "unbalanced parentheses")
    return seen


def loader_strings(text: str) -> list[str]:
    """The input as the loader prints it, which the generated code holds for errors and
    hooks (vm/aot.h Source): each function's name, and each instruction's statement,
    callee and results' names (tensorvm._C.resolve). None for a program it refuses."""
    from tensorvm import _C

    try:
        functions = _C.resolve(text)
    except RuntimeError:
        return []
    return [s for f in functions for s in [f["name"], *f["reg_names"]]
            + [x for ins in f["code"] for x in (ins["text"], ins["callee"])]]


def check_project(files: dict[str, str], ns: str, inputs: list[str]) -> dict:
    """Checks the four files of a generated project (name -> text) against the input
    strings the program was made of. Raises Violation; returns what it counted."""
    allowed = {s.encode("utf-8", "surrogateescape") for s in inputs}
    counts: dict[str, int] = {}
    for fname in (f"{ns}.cpp", f"{ns}.h", f"{ns}_run.cpp"):
        for k, v in check_cpp(fname, files[fname], ns, allowed).items():
            counts[k] = counts.get(k, 0) + v
    for k, v in check_cmake("CMakeLists.txt", files["CMakeLists.txt"], ns, allowed).items():
        counts[k] = counts.get(k, 0) + v
    return counts
