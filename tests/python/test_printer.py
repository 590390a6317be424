"""The Python printer: canonical text, byte-identical with the C++ printer, and a fixed point of parse."""
import math
import random
import struct

import numpy as np
import pytest

import tensorvm
from tensorvm import ops as T
from tensorvm.pycompiler import ir
from tensorvm.pycompiler.ir_check import parse
from tensorvm.pycompiler.ir import print_module
from tensorvm.pycompiler.literals import PrintError, format_float, quote_string

from pyc_helpers import HAS_PARSE_AND_PRINT, REPO, requires_parse_and_print


def _cpp_programs():
    src = (REPO / "tests/cpp/ir_test_programs.h").read_text()
    out = {}
    for name in ("kRichProgram", "kDocExample"):
        out[name] = src.split(f'{name} = R"IR(')[1].split(')IR"')[0]
    return out


def cpp(text):
    return tensorvm._C.parse_and_print(text)


def literal_program(exprs):
    """A program whose one statement passes every expr in `exprs` to an op called f."""
    body = "\n".join(f"    a{i} = f({e})" for i, e in enumerate(exprs))
    return f"# tensorvm ir 1\ndef lits(x: Tensor) -> None:\n{body}\n    return\n"


SPECIAL_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.1, 0.2, 1 / 3, 1e-05, 1e-4, 0.00015000000000000001, 1e16, 1e15, 123456789012345.6,
                  1.2345678901234568e+16, 5e-324, 1e-323, 2.2250738585072014e-308, 1.7976931348623157e+308,
                  9007199254740992.0, 2.0**63, -2.0**63, 1e22, 1e23, 65504.0, 3.4028234663852886e+38,
                  float("inf"), float("-inf"), float("nan"), 0.125, 1e-7, 1.5e-10, 6.02214076e23, 1e100, -1e-100]


def test_format_float_is_repr():
    for v in SPECIAL_FLOATS:
        assert format_float(v) == ("nan" if math.isnan(v) else repr(v))
    assert format_float(float("-nan")) == "nan"
    assert format_float(struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0]) == "nan"


def test_quote_string_rules():
    assert quote_string("") == '""'
    assert quote_string('q"\\\n\t\r') == '"q\\"\\\\\\n\\t\\r"'
    assert quote_string("\x00\x01\x1f\x7f") == '"\\x00\\x01\\x1f\\x7f"'
    assert quote_string("é'€😀") == "\"é'€😀\""
    assert quote_string("\x80\x9f") == '"\x80\x9f"'  # C1 controls are >= 0x80 in UTF-8: as is
    with pytest.raises(PrintError, match="surrogate"):
        quote_string("\ud800")


def test_print_expr_forms():
    m = ir.Module([ir.Function("f", [ir.Param("n", "int")], ["int", "Tensor"], True, [
        ir.Assign(["a"], "op", [None, True, False, -1, 2.5, "s", ir.IntList((1, -1, ir.Name("n")))],
                  [("k", 0.125), ("flag", True)]),
        ir.Assign(["b"], "op1", [], [], unpack=True),
        ir.Return([ir.Name("n"), ir.Name("a")]),
    ])])
    assert print_module(m) == (
        "# tensorvm ir 1\n"
        "def f(n: int) -> tuple[int, Tensor]:\n"
        '    a = op(None, True, False, -1, 2.5, "s", [1, -1, n], k=0.125, flag=True)\n'
        "    b, = op1()\n"
        "    return n, a\n")
    with pytest.raises(PrintError, match="int64"):
        print_module(ir.Module([ir.Function("g", [], [], False, [ir.Assign(["a"], "op", [2**63])])]))
    with pytest.raises(PrintError, match="8 items"):
        print_module(ir.Module([ir.Function("g", [], [], False, [ir.Assign(["a"], "op", [ir.IntList(tuple(range(9)))])])]))


@pytest.mark.parametrize("name", ["kRichProgram", "kDocExample"])
def test_cpp_test_programs_round_trip(name):
    text = _cpp_programs()[name]
    module = parse(text, ops="*", types="*")
    assert str(module) == text
    assert str(parse(str(module), ops="*", types="*")) == text


def test_noncanonical_input_prints_canonically():
    text = ("# tensorvm ir 1\n\n# a comment\ndef f(x:Tensor,n:int)->tuple[Tensor,int]:\n"
            "  a,=g( x , 'it''s' if False else 's' )\n" "  return a,n\n")
    with pytest.raises(Exception):
        parse(text, ops="*", types="*")  # an if-expression is not IR
    text = ("# tensorvm ir 1\n\n# a comment\ndef f(x:Tensor,n:int)->tuple[Tensor,int]:\n"
            "  a,=g( x , 'it\\'s', .5, 1E3, -0.0, [ n,-1 ] )\n\n  # inside\n  return a,n\n")
    out = str(parse(text, ops="*", types="*"))
    assert out == ("# tensorvm ir 1\ndef f(x: Tensor, n: int) -> tuple[Tensor, int]:\n"
                   "    a, = g(x, \"it's\", 0.5, 1000.0, -0.0, [n, -1])\n    return a, n\n")
    if HAS_PARSE_AND_PRINT:
        assert cpp(text) == out


def _rich_builder():
    rng = np.random.default_rng(0)
    weights = {f"layers.{i}.fc.weight": rng.standard_normal((4, 4)).astype(np.float32) for i in range(2)}
    weights["layers.0.fc.bias"] = np.zeros(4, np.float32)
    weights["final.weight"] = rng.standard_normal((4, 4)).astype(np.float32)
    pb = tensorvm.ProgramBuilder(weights=weights)

    @pb.function
    def layer(x: tensorvm.Tensor, i: int) -> tensorvm.Tensor:
        h = T.linear(x, T.param("layers.{}.fc.weight", i))
        return T.silu(h)

    @pb.function
    def two(x: tensorvm.Tensor, scale: float, flag: bool) -> tuple[tensorvm.Tensor, float, bool, int, str]:
        y = T.linear(layer(layer(x, 0), 1), T.param("final.weight"), T.param("layers.0.fc.bias"))
        z = T.mul(y, scale)
        n = T.add(3, -7)
        return z, 1e-05, flag, n, 'quote"back\\slash\ttab\x01é'

    @pb.function
    def loop(x: tensorvm.Tensor, limit: int) -> tuple[int, tensorvm.Tensor]:
        def going(i, acc, lim):
            return i < lim

        def step(i, acc, lim):
            return i + 1, T.mul(acc, 0.5), lim

        i, acc, _ = tensorvm.while_loop(going, step, 0, x, limit)
        big = T.gt(i, 2)
        out = tensorvm.cond(big, lambda a: T.neg(a), lambda a: T.mul(a, float("inf")), acc)
        return i, out

    return pb


def test_builder_program_round_trips():
    text = str(_rich_builder().program())
    assert text.startswith("# tensorvm ir 1\ndef layer(x: Tensor, i: int) -> Tensor:\n")
    assert 'return mul_0, 1e-05, flag, add_0, "quote\\"back\\\\slash\\ttab\\x01é"' in text
    assert str(parse(text)) == text


@requires_parse_and_print
@pytest.mark.parametrize("name", ["kRichProgram", "kDocExample"])
def test_cpp_printer_agrees_on_test_programs(name):
    text = _cpp_programs()[name]
    assert cpp(text) == str(parse(text, ops="*", types="*")) == text


@requires_parse_and_print
def test_cpp_printer_agrees_on_builder_program():
    text = str(_rich_builder().program())
    assert cpp(text) == text


@requires_parse_and_print
def test_cpp_printer_agrees_on_floats():
    rnd = random.Random(1)
    values = list(SPECIAL_FLOATS)
    for _ in range(3000):
        bits = rnd.getrandbits(64)
        values.append(struct.unpack("<d", struct.pack("<Q", bits))[0])
    for _ in range(1000):
        values.append(rnd.uniform(-1e6, 1e6))
        values.append(float(np.float32(rnd.gauss(0, 1))))
        values.append(rnd.randint(-10**18, 10**18) * 10.0 ** rnd.randint(-30, 30))
    exprs = [format_float(v) for v in values]
    text = literal_program(exprs)
    assert str(parse(text, ops="*")) == text
    assert cpp(text) == text
    # Non-canonical spellings come back canonical from both printers.
    spelled = ["1E5", "1e+005", ".5", "5.", "0.100", "1_0".replace("_", ""), "00.5", "2.50e-3", "1e400", "1e-400"]
    text = literal_program(spelled)
    assert cpp(text) == str(parse(text, ops="*"))


@requires_parse_and_print
def test_cpp_printer_agrees_on_strings_and_ints():
    rnd = random.Random(2)
    strings = ["", "plain", "é", "€", "😀", "\x7f", "\x00", "'", '"', "\\", "\n\t\r", "\x80", "\u2028", "{}"]
    for _ in range(300):
        strings.append("".join(chr(rnd.choice([rnd.randint(0, 0x7F), rnd.randint(0x80, 0x7FF), rnd.randint(0x800, 0xD7FF),
                                                rnd.randint(0x10000, 0x10FFFF)])) for _ in range(rnd.randint(0, 12))))
    ints = [0, 1, -1, 2**63 - 1, -2**63, 10**18] + [rnd.randint(-2**63, 2**63 - 1) for _ in range(200)]
    exprs = [quote_string(s) for s in strings] + [str(i) for i in ints] + ["[]", "[1, -2, 3]", "True", "None", "inf", "-inf", "nan"]
    text = literal_program(exprs)
    assert str(parse(text, ops="*")) == text
    assert cpp(text) == text
    # Single quotes, \' and \x escapes are input-only spellings.
    text = literal_program(["'a\\'b'", "'\\x41\\x7f\\xe9'", '"\\x00"'])
    assert cpp(text) == str(parse(text, ops="*"))
    assert '"a\'b"' in cpp(text) and '"A\\x7fé"' in cpp(text)
