"""pycompiler/escape.py: the one function per place through which input text reaches
generated C++ and CMake (issue 25). Each keeps hostile text inert in its place and, where
it shows the text, shows it faithfully."""
import re
import sys
from pathlib import Path

import pytest

from tensorvm.pycompiler.escape import (CPP_KEYWORDS, EscapeError, cmake_comment, cmake_quoted, cpp_comment, cpp_ident,
                                        cpp_namespace, cpp_string, render)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
from aot_check import _decode_cpp_string  # noqa: E402

HOSTILE = ["model", "a\nb", "a\r\nb", "x\\", "\\\n", "*/ y /*", "//", '"q"', "'", "${X}", "$(id)", "$ENV{HOME}",
           "@VAR@", "@NS:namespace@", "??/", "#[[x]]", "[[x", "é", "\u202e", "\u2028", "\x85", "\x00", "\x7f",
           "\udcff", "", " ", "{}", ";", "C:\\models\\"]


def _decode_comment(text: str) -> bytes:
    if not text.startswith('"'):
        return text.encode()
    return re.sub(rb"\\(x[0-9a-f]{2}|.)", lambda m: {b"n": b"\n", b"r": b"\r", b"t": b"\t"}.get(
        m.group(1), bytes([int(m.group(1)[1:], 16)]) if m.group(1).startswith(b"x") else m.group(1)),
        text[1:-1].encode())


@pytest.mark.parametrize("fn", [cpp_comment, cmake_comment])
def test_comment_text_is_one_inert_line_that_shows_the_input(fn):
    for s in HOSTILE:
        c = fn(s)
        assert all(" " <= ch <= "~" for ch in c), (s, c)
        assert "*/" not in c and "/*" not in c and "??" not in c and not c.endswith("\\") and not c.startswith("["), c
        assert _decode_comment(c) == s.encode("utf-8", "surrogateescape"), (s, c)
    assert fn("model.tvm") == "model.tvm"  # plain text stays as it is


def test_cpp_string_holds_the_bytes():
    for s in HOSTILE:
        lit = cpp_string(s)
        assert lit[0] == lit[-1] == '"' and all(" " <= ch <= "~" for ch in lit) and "?" not in lit
        assert _decode_cpp_string(lit[1:-1]) == s.encode("utf-8", "surrogateescape")
    assert cpp_string("a\0" + "1") == '"a\\0001"'  # an octal escape never takes the next digit


def test_cpp_ident_is_one_to_one_under_its_kind():
    names = ["x", "_x", "x_", "__x", "a__b", "a_0b", "_0x", "0x", "int", "linux", "v_x", "f", "c", "x__", "_", "__"]
    for kind in ("v", "f", "w", "op", "t"):
        idents = [cpp_ident(kind, n) for n in names]
        assert len(set(idents)) == len(names), idents
        for i in idents:
            assert re.fullmatch(kind + r"_[A-Za-z0-9_]+", i) and "__" not in i and i not in CPP_KEYWORDS, i
    assert {cpp_ident("v", n) for n in names}.isdisjoint(cpp_ident("f", n) for n in names)
    # other text (a weight name): its letters and digits, the caller makes it unique
    assert cpp_ident("w", "model.shared.weight") == "w_model_shared_weight"
    assert cpp_ident("w", "\n*/é") == "w_0" and cpp_ident("s", "a" * 50, limit=24) == "s_" + "a" * 24
    with pytest.raises(EscapeError):
        cpp_ident("x", "a")


@pytest.mark.parametrize("name", ["a\nb", "a\rb", "a*/b", "a\\b", 'a"b', "a${X}", "a$(id)", "a@VAR@", "é", "mod el", "",
                                  "1x", "_x", "a__b", "x-run", "int", "delete", "class", "std", "vm", "main", "linux",
                                  "tensorvm", "TensorVM_x", "test", "install", "ALL_BUILD", "EOF", "T5", "stdin", "size_t"])
def test_namespace_refuses_what_it_cannot_write_as_given(name):
    with pytest.raises(EscapeError, match="--name"):
        cpp_namespace(name)


def test_namespace_takes_names_of_the_generated_code():
    for name in ("opus", "c", "f", "in_", "Program", "Session", "run", "lit", "aot", "signatures", "kSource", "x_1"):
        assert cpp_namespace(name) == name


def test_cmake_quoted_expands_nothing():
    assert cmake_quoted("/a/b c") == '"/a/b c"'
    assert cmake_quoted('${X}$ENV{Y}"\\;@V@é') == '"\\${X}\\$ENV{Y}\\"\\\\;\\@V\\@é"'
    for bad in ("a\nb", "a\rb", "\x7f", "\udcff"):
        with pytest.raises(EscapeError):
            cmake_quoted(bad)


def test_render_fills_each_placeholder_once_through_its_function():
    t = "// @A:cpp_comment@\nx = @B:cpp_string@;\n# @A:cmake_comment@\n@C:code@"
    out = render(t, code={"c": "set(X 1)"}, a="@B:cpp_string@\nrm", b="@A:cpp_comment@")
    assert out == '// "@B:cpp_string@\\nrm"\nx = "@A:cpp_comment@";\n# "@B:cpp_string@\\nrm"\nset(X 1)'
    with pytest.raises(EscapeError, match="names no function"):
        render("@A@", a="x")
    with pytest.raises(EscapeError, match="no function 'raw'"):
        render("@A:raw@", a="x")
    with pytest.raises(EscapeError, match="not used: b"):
        render("@A:cpp_string@", a="x", b="y")


def test_no_macro_of_the_generated_codes_headers_has_a_program_names_form(tmp_path):
    """Program names are KIND_NAME because no macro has that form (a macro would replace
    the name): checked on the headers the generated code includes, in CMake's GNU mode."""
    import shutil
    import subprocess

    root = Path(__file__).resolve().parents[2]
    if not shutil.which("c++"):
        pytest.skip("no C++ compiler")
    (tmp_path / "x.cpp").write_text('#include "vm/aot.h"\n#include "cli/main.h"\n'
                                    "#include <array>\n#include <limits>\n#include <utility>\n")
    res = subprocess.run(["c++", "-std=gnu++17", "-dM", "-E", f"-I{root}", "-I/usr/include/eigen3", "x.cpp"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    macros = re.findall(r"^#define (\w+)", res.stdout, re.M)
    assert len(macros) > 500 and "linux" in macros  # (GNU mode: `linux` and `unix` are macros)
    assert not [m for m in macros if re.match(r"(v|f|w|op|t|i|s|l)_", m)]
