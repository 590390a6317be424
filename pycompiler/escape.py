"""How input text reaches generated C++ and CMake (compile, selective-build): one function per place.

Every string that comes from the input (a program's function, value and weight names,
its literals and IR text, the program directory's path, --name, --source) reaches
generated text through exactly one of these, chosen by where it lands:

  cpp_string     a C++ string literal: any text, byte for byte
  cpp_comment    the text of a C++ comment (// or /* */): any text, as one inert line
  cpp_ident      a C++ identifier made from a program's name, under a prefix by kind
  cpp_namespace  the namespace, library, target and file names (--name): checked, not changed
  cmake_quoted   a CMake quoted argument: any text without control characters
  cmake_comment  the text of a CMake `#` comment: any text, as one inert line

Written raw, a weight name holding a newline ended a `//` comment and the rest of it was
compiled, and a directory name holding one ran a command at `cmake -S` (issue 25). The
templates name the function of each placeholder (@SOURCE:cmake_comment@), so filling one
cannot skip it (render).

Program-derived identifiers cannot collide with the generated code's own names, nor with
macros: each is `KIND_BODY` (KIND: v value, f function, w weight, op op, t a temporary of
the emitter), and no name of the templates, the emitter or the headers they include has
that form (tests/python/test_escape.py checks the headers' macros). The literals of
namespace lit are named so too (i int, f float, s string, l list).
"""
from __future__ import annotations

import re
from typing import Optional

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KINDS = frozenset({"v", "f", "w", "op", "t", "i", "s", "l"})

# C++ keywords and alternative tokens: refused as a namespace.
CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class
compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype
default delete do double dynamic_cast else enum explicit export extern false float for friend goto if import
inline int long module mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected
public register reinterpret_cast requires return short signed sizeof static static_assert static_cast struct
switch template this thread_local throw true try typedef typeid typename union unsigned using virtual void
volatile wchar_t while xor xor_eq final override
""".split())

# Names a namespace of the generated code cannot take: the top-level namespaces of the
# runtime and of the C++ library and the global names the generated code uses (it names
# them inside its namespace); `main` (NAME_run.cpp defines it); the macros GCC and Clang
# predefine in their GNU modes (CMake's default) and the C library's lowercase ones; and
# CMake's reserved target names (the library's target is NAME). Other global names of the
# C library (`time`, `exit`) fail the C++ build, the compiler naming them, and any other
# macro fails it with NAME.h's #error first.
TAKEN_NAMESPACES = frozenset("""
std vm ir ops text cli simd fmt Eigen nlohmann sentencepiece dnnl pybind11 main size_t int64_t uint64_t INT64_MIN
linux unix i386 stdin stdout stderr errno assert offsetof alloca
all clean help install test package package_source edit_cache rebuild_cache list_install_components
ALL_BUILD ZERO_CHECK RUN_TESTS INSTALL PACKAGE
""".split())


class EscapeError(ValueError):
    pass


def cpp_string(s: str) -> str:
    """A C++ string literal of the bytes of `s` (UTF-8; a path's undecodable bytes as they
    were). Octal escapes stop after 3 digits, so no following character extends one; `?`
    is escaped so no trigraph forms."""
    out = ['"']
    for b in s.encode("utf-8", "surrogateescape"):
        ch = chr(b)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= b < 127 and ch != "?":
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    out.append('"')
    return "".join(out)


def _inert_line(text: str) -> str:
    """`text` as printable ASCII that ends no comment, splices no line and starts no
    bracket comment: as it is when it already is, else quoted with escapes (a quoted form
    ends in `"`, never in a backslash). Non-ASCII is escaped too: bidirectional controls
    in a comment can make code read as something else."""
    if (all(" " <= ch <= "~" for ch in text) and not text.startswith("[")
            and not any(t in text for t in ("\\", '"', "/*", "*/", "??"))):
        return text
    out = ['"']
    for b in text.encode("utf-8", "surrogateescape"):
        ch = chr(b)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 32 <= b < 127 and ch != "*":  # (no `*`, so no `*/` or `/*`)
            out.append(ch)
        else:
            out.append({10: "\\n", 13: "\\r", 9: "\\t"}.get(b, f"\\x{b:02x}"))
    out.append('"')
    return "".join(out)


def cpp_comment(text: str) -> str:
    """The text of a `//` or `/* */` comment showing `text`."""
    return _inert_line(text)


def cmake_comment(text: str) -> str:
    """The text after `# ` of a CMake line comment showing `text`."""
    return _inert_line(text)


def cpp_ident(kind: str, name: str, limit: int = 0) -> str:
    """The C++ identifier of a program's name: KIND_NAME. For an IR name (an identifier)
    one to one: a name that starts with `_` or holds `__` (reserved in C++) is written
    KIND_0 then the name with each `_` as `_0` (a plain name never starts with a digit).
    Other text (a weight name, a literal), or any text with a `limit`, gives KIND and its
    letters and digits (cut to `limit` characters); the caller makes those unique."""
    if kind not in KINDS:
        raise EscapeError(f"cpp_ident: unknown kind '{kind}'")
    if IDENT.fullmatch(name) and not limit:
        if name.startswith("_") or "__" in name:
            return f"{kind}_0" + name.replace("_", "_0")
        return f"{kind}_{name}"
    body = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")
    return f"{kind}_{(body[:limit].rstrip('_') if limit else body) or '0'}"


def cpp_namespace(name: str) -> str:
    """--name: the C++ namespace, the CMake library and target names and the file names.
    Written as given, so it must be safe in all of them: a C++ identifier of ASCII letters,
    digits and single underscores, starting with a letter, with a lowercase letter (no
    macro's form), that is no keyword and no name the generated code or its build uses."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) or "__" in name:
        raise EscapeError(f"--name {name!r}: a name must be ASCII letters, digits and single underscores, "
                          "starting with a letter (it names the C++ namespace, the CMake targets and the files)")
    if name in CPP_KEYWORDS:
        raise EscapeError(f"--name {name!r}: a C++ keyword cannot name the namespace")
    if not any("a" <= ch <= "z" for ch in name):
        raise EscapeError(f"--name {name!r}: a name without a lowercase letter is how the C library names its macros "
                          "(EOF, NULL, SIZE_MAX); use lowercase")
    if name in TAKEN_NAMESPACES or name.lower().startswith("tensorvm"):
        raise EscapeError(f"--name {name!r}: taken by the runtime, C++ or CMake; choose another")
    return name


def cmake_quoted(text: str) -> str:
    """A CMake quoted argument holding `text`: `\\`, `"`, `$` and `@` escaped, so no variable
    reference (${...}, $ENV{...}, $CACHE{...}) is expanded, nor an @VAR@ should the value
    reach configure_file or file(CONFIGURE). Control characters are refused:
    a cache value holding a newline would be a line of CMakeCache.txt of its own."""
    bad = [ch for ch in text if ord(ch) < 0x20 or ord(ch) == 0x7F]
    if bad:
        raise EscapeError(f"{text!r}: holds a control character ({bad[0]!r}), which CMakeLists.txt cannot carry safely")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise EscapeError(f"{text!r}: not valid UTF-8, which CMakeLists.txt cannot carry") from None
    return '"' + re.sub(r'([\\"$@])', r"\\\1", text) + '"'


_FILL = {"cpp_string": cpp_string, "cpp_comment": cpp_comment, "cmake_comment": cmake_comment,
         "cmake_quoted": cmake_quoted, "namespace": cpp_namespace}
_PLACEHOLDER = re.compile(r"@([A-Z_]+):([a-z_]+)@")


def render(template: str, code: Optional[dict[str, str]] = None, **values: str) -> str:
    """`template` with each @KEY:FUNCTION@ replaced by FUNCTION(values[KEY]), in one pass
    (a value is never searched for placeholders). FUNCTION `code` takes code[KEY] as it
    is: text the compiler wrote itself from values it escaped. Every placeholder must name
    its function, and every value must be used."""
    code = code or {}
    bare = re.search(r"@[A-Z_]+@", template)
    if bare:
        raise EscapeError(f"template placeholder {bare.group(0)} names no function")
    used = set()

    def fill(m: re.Match) -> str:
        key, fn = m.group(1).lower(), m.group(2)
        used.add(key)
        if fn == "code":
            return code[key]
        if fn not in _FILL:
            raise EscapeError(f"template placeholder {m.group(0)}: no function '{fn}'")
        return _FILL[fn](values[key])

    text = _PLACEHOLDER.sub(fill, template)
    unused = (set(values) | set(code)) - used
    if unused:
        raise EscapeError(f"template values not used: {', '.join(sorted(unused))}")
    return text
