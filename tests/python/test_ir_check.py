"""ir_check: only the grammar of docs/ir.md gets through, and every refusal names its line."""
import random

import pytest

import tensorvm
from tensorvm.pycompiler.ir_check import IRCheckError, check, parse

from pyc_helpers import HAS_PARSE_AND_PRINT, requires_parse_and_print

H = "# tensorvm ir 1\n"
GOOD = H + """def ffn(x: Tensor, layer: int) -> Tensor:
    w1 = param("model.decoder.layers.{}.fc1.weight", layer)
    h = linear(x, w1)
    a = silu(h)
    return a

def count_cond(i: int, acc: Tensor, limit: int) -> bool:
    c = lt(i, limit)
    return c

def count_body(i: int, acc: Tensor, limit: int) -> tuple[int, Tensor, int]:
    j = add(i, 1)
    acc2 = add(acc, 1.0)
    return j, acc2, limit

def count_to(limit: int, x: Tensor) -> tuple[int, Tensor]:
    i0 = add(0, 0)
    i, acc, n = while_loop(count_cond, count_body, i0, x, limit)
    y = reshape(acc, [1, -1, n])
    z = cond(True, ffn_zero, ffn_zero, y)
    return i, z

def ffn_zero(x: Tensor) -> Tensor:
    y = ffn(x, 0)
    return y
"""


def fn(body, sig="def f(x: Tensor) -> Tensor:"):
    return H + sig + "\n" + "".join(f"    {line}\n" for line in body.split("\n"))


def rejects(text, match=None, line=None, **kw):
    with pytest.raises(IRCheckError) as e:
        check(text, **kw)
    if match:
        assert e.value.message and __import__("re").search(match, e.value.message), e.value.message
    if line is not None:
        assert e.value.line == line, (e.value.line, str(e.value))
    assert str(e.value).startswith(f"program.py:{e.value.line}: ")
    return e.value


def test_good_program_passes():
    tree = check(GOOD)
    assert [n.name for n in tree.body] == ["ffn", "count_cond", "count_body", "count_to", "ffn_zero"]
    assert str(parse(GOOD)) == GOOD


HOSTILE = [
    # (statement lines inside `def f(x: Tensor) -> Tensor:`, expected message fragment)
    ("y = ().__class__.__bases__\nreturn y", "call"),
    ("y = f(().__class__)\nreturn y", "attribute"),
    ("y = add(x.__class__, 1)\nreturn y", "attributes|attribute"),
    ('y = __import__("os")\nreturn y', "dunder"),
    ('y = exec("print(1)")\nreturn y', "unknown op or function 'exec'"),
    ('y = eval("1")\nreturn y', "unknown op or function 'eval'"),
    ('y = open("/etc/passwd")\nreturn y', "unknown op or function 'open'"),
    ('y = getattr(x, "__class__")\nreturn y', "unknown op or function 'getattr'"),
    ("y = (lambda: 1)()\nreturn y", "callee|lambda"),
    ("y = add(lambda: 1, x)\nreturn y", "lambda"),
    ("y = add([i for i in x], x)\nreturn y", "comprehension"),
    ("y = add(x, x + 1)\nreturn y", "operators"),
    ("y = add(x, -x)\nreturn y", "'-'"),
    ("y = add(x, not x)\nreturn y", "operators"),
    ("y = add(x, x if x else x)\nreturn y", "conditional"),
    ('y = add(x, f"{x}")\nreturn y', "f-string"),
    ("y = add(x, add(x, x))\nreturn y", "nested call"),
    ("y = add(*x)\nreturn y", "starred|operators"),
    ("y = add(**x)\nreturn y", "operators|'\\*\\*'"),
    ("y = add(x, (z := x))\nreturn y", "operators|:="),
    ("y = add(x, x[0])\nreturn y", "subscript"),
    ("y = add(x, {1: 2})\nreturn y", "dict"),
    ("y = add(x, (1, 2))\nreturn y", "tuple|parentheses"),
    ("y = add(x, b'abc')\nreturn y", "string literal|bytes"),
    ("y = add(x, 1j)\nreturn y", "literal"),
    ("y = add(x, 0x10)\nreturn y", "number literal"),
    ("y = add(x, 1_000)\nreturn y", "number literal"),
    ("y = add(x, 9223372036854775808)\nreturn y", "int64"),
    ("y = add(x, ...)\nreturn y", "literal|Ellipsis"),
    ('y = add(x, r"\\x")\nreturn y', "escape"),
    ('y = add(x, "a" "b")\nreturn y', "after an argument .*found a string"),
    ('y = add(x, """a""")\nreturn y', "after an argument .*found a string"),
    ('y = add(x, "\\u0041")\nreturn y', "string literal"),
    ('y = add(x, "\\N{BULLET}")\nreturn y', "string literal"),
    ("y = add(x, True) if x else x\nreturn y", "call|conditional"),
    ("import os\ny = add(x, 1)\nreturn y", "imports"),
    ("from os import system\nreturn x", "imports"),
    ("global y\nreturn x", "global"),
    ("nonlocal y\nreturn x", "nonlocal|syntax"),
    ("def g(a: Tensor) -> Tensor:\n    return a\nreturn x", "nested function"),
    ("class A: pass\nreturn x", "classes"),
    ("with x: pass\nreturn x", "with"),
    ("try:\n    y = add(x, 1)\nexcept: pass\nreturn x", "try"),
    ("for i in x: pass\nreturn x", "for loops"),
    ("while x: pass\nreturn x", "while statements"),
    ("if x: pass\nreturn x", "if statements"),
    ("add(x, 1)\nreturn x", "assigned"),
    ("x += 1\nreturn x", "operators|augmented"),
    ("y: Tensor = add(x, 1)\nreturn y", "annotated"),
    ("y = z = add(x, 1)\nreturn y", "chained"),
    ("y = x\nreturn y", "expected a call"),
    ("y = 1\nreturn y", "expected a call"),
    ("y = add(x, 1); z = add(y, 1)\nreturn z", "one statement per line"),
    ("y = add(x, 1)  # trailing comment\nreturn y", "comment"),
    ("y = add(x,\n  1)\nreturn y", "expected a value .*found end of line"),
    ("y = add(x, 1) \\\n\nreturn y", "syntax|continuation|'\\\\'"),
    ("[a, b] = add(x, 1)\nreturn a", "targets"),
    ("(a, b) = add(x, 1)\nreturn a", "expected variable name, found '\\('"),
    ("a, *b = add(x, 1)\nreturn a", "operators|starred"),
    ("x.y = add(x, 1)\nreturn x", "attributes|attribute"),
    ("y = add(x, 1)\nreturn (y)", "expected a value .*found '\\('"),
    ("y = add(x, 1)\nreturn y\nz = add(x, 2)", "unreachable"),
    ("y = add(x, 1)\ny = add(y, 1)\nreturn y", "SSA"),
    ("x = add(x, 1)\nreturn x", "SSA|already bound"),
    ("y = add(z, 1)\nz = add(x, 1)\nreturn y", "before it is bound"),
    ("y = add(q, 1)\nreturn y", "unknown name 'q'"),
    ("y = add(add, 1)\nreturn y", "can only be called"),
    ("y = add(print, 1)\nreturn y", "unknown name 'print'"),
    ("y = add(__builtins__, 1)\nreturn y", "dunder"),
    ("add = linear(x, x)\nreturn add", "op"),
    ("param = linear(x, x)\nreturn param", "builtin"),
    ("inf = linear(x, x)\nreturn inf", "builtin|cannot be called|unknown"),
    ("y = inf(x)\nreturn y", "cannot be called"),
    ("y = add(x, -nan)\nreturn y", "'-'"),
    ("y = reshape(x, [1, 2, 3, 4, 5, 6, 7, 8, 9])\nreturn y", "8 items"),
    ("y = reshape(x, [1.5])\nreturn y", "list items"),
    ("y = reshape(x, [inf])\nreturn y", "list items"),
    ("y = reshape(x, [[1]])\nreturn y", "list items"),
    ("y = reshape(x, ['a'])\nreturn y", "list items"),
    ("y = add(x, 1)\nreturn f", "can only be passed"),
    ("y = add(x, f)\nreturn [f]", "list items|can only be passed"),
    ("y = while_loop(x, x, x)\nreturn y", "function names"),
    ("y = cond(x, x, x)\nreturn y", "function names|positional"),
    ("y = param(x)\nreturn y", "string literal"),
    ('y = param("a", 1, 2)\nreturn y', "name and an optional index"),
    ("y = add(x, 1)\nassert y\nreturn y", "assert"),
    ("del x\nreturn x", "del"),
    ("pass\nreturn x", "pass"),
    ("raise x\nreturn x", "raise"),
    ("y = add(x, 1)\nreturn y if y else x", "conditional"),
    ("yield x", "call|yield"),
    ('y = add(x, "\x01")\nreturn y', "control character"),
    ("y = add(x, 1)\n\treturn y", "tab"),
    ("y = add(é, 1)\nreturn y", "ASCII|unknown"),
    ("é = add(x, 1)\nreturn é", "ASCII"),
    ("y = add(x, True, __class__=1)\nreturn y", "dunder"),
    ("match x:\n    case 1: pass\nreturn x", "match"),
    ("y = add(x, 1) if True else None\nreturn y", "call|conditional"),
    ("y = add(x, await x)\nreturn y", "await|syntax"),
    ("y = add(x, 1)\nreturn *y,", "starred|operators|syntax"),
]


@pytest.mark.parametrize("body,match", HOSTILE)
def test_hostile_statements_are_rejected(body, match):
    err = rejects(fn(body), match)
    assert err.line >= 2


@pytest.mark.parametrize("text,match", [
    ("", "header"),
    ("def f(x: Tensor) -> Tensor:\n    return x\n", "header"),
    ("# tensorvm ir 2\n", "unsupported IR version"),
    (H + "x = add(1, 2)\n", "top level"),
    (H + "import os\n", "imports"),
    (H + "().__class__.__bases__\n", "top level"),
    (H + '"docstring"\n', "top level"),
    (H + "@decorator\ndef f(x: Tensor) -> Tensor:\n    return x\n", "decorators"),
    (H + "async def f(x: Tensor) -> Tensor:\n    return x\n", "async"),
    (H + "class C:\n    pass\n", "classes"),
    (H + "def f(x) -> Tensor:\n    return x\n", "annotation"),
    (H + "def f(x: Tensor):\n    return x\n", "return type"),
    (H + "def f(x: Tensor = None) -> Tensor:\n    return x\n", "default|operators"),
    (H + "def f(*x: Tensor) -> Tensor:\n    return x\n", "operators|plain"),
    (H + "def f(x: Tensor, /) -> Tensor:\n    return x\n", "operators|plain"),
    (H + "def f(**x: Tensor) -> Tensor:\n    return x\n", "operators|plain"),
    (H + "def f(x: Tensor, x: int) -> Tensor:\n    return x\n", "duplicate|syntax"),
    (H + "def f(x: os.path) -> Tensor:\n    return x\n", "attribute"),
    (H + "def f(x: list[int]) -> Tensor:\n    return x\n", "type must be a name|subscript"),
    (H + "def f(x: Tensor) -> list[Tensor]:\n    return x\n", "tuple"),
    (H + "def f(x: Tensor) -> tuple[Tensor, list[int]]:\n    return x\n", "type must be a name"),
    (H + "def f(x: Tensor) -> __import__('os'):\n    return x\n", "dunder|type must be a name|parentheses"),
    (H + "def f(x: exec) -> Tensor:\n    return x\n", "unknown type 'exec'"),
    (H + "def f(x: Tensor) -> Tensor: return x\n", "next line"),
    (H + "def f(x: Tensor,\n      n: int) -> Tensor:\n    return x\n", "one line"),
    (H + "def f(x: Tensor) -> Tensor:\n    return x\n\ndef f(x: Tensor) -> Tensor:\n    return x\n", "duplicate function"),
    (H + "def add(x: Tensor) -> Tensor:\n    return x\n", "name of an op"),
    (H + "def Tensor(x: Tensor) -> Tensor:\n    return x\n", "type name"),
    (H + "def param(x: Tensor) -> Tensor:\n    return x\n", "builtin"),
    (H + "def __init__(x: Tensor) -> Tensor:\n    return x\n", "dunder"),
    (H + "def f(add: Tensor) -> Tensor:\n    return add\n", "name of an op"),
    (H + "def f(g: Tensor) -> Tensor:\n    return g\n\ndef g(x: Tensor) -> Tensor:\n    return x\n", "function of the program"),
    (H + "def f(x: Tensor) -> Tensor:\n    y = g(x)\n    return y\n\ndef g(x: Tensor) -> Tensor:\n    y = f(x)\n    return y\n",
     "recursion"),
    (H + "def f(x: Tensor) -> Tensor:\n    y = f(x)\n    return y\n", "recursion"),
    (H + "def f(x: Tensor) -> Tensor:\n    return x\nx = f(1)\n", "top level"),
    (H + "def f(x: Tensor) -> Tensor:\n    return x\r\r\n", "carriage return"),
    (H + "def f(x: Tensor) -> Tensor:\n    return x\x00\n", "control character|null|NUL byte"),
    (H + "def f(x: Tensor) -> Tensor:\n    return x\x0c\n", "control character"),
    (H + "lambda: 1\n", "top level"),
    (H + "if True:\n    def f(x: Tensor) -> Tensor:\n        return x\n", "top level|if"),
])
def test_hostile_programs_are_rejected(text, match):
    rejects(text, match)


def test_errors_name_the_line():
    text = GOOD + "\ndef bad(x: Tensor) -> Tensor:\n    y = linear(x, x)\n    z = x.T\n    return z\n"
    err = rejects(text, "attribute")
    assert err.line == text.split("\n").index("    z = x.T") + 1
    assert rejects(fn("y = add(x, 1)\nz = add(q, 1)\nreturn z"), "unknown name 'q'").line == 4


def test_deep_nesting_is_refused_cleanly():
    for depth in (50, 500, 5000, 100000):
        rejects(fn("y = add(x, " + "[" * depth + "1" + "]" * depth + ")\nreturn y"))
        rejects(fn("y = add(x, " + "(" * depth + "1" + ")" * depth + ")\nreturn y"))
        rejects(fn("y = add(x, " + "-" * depth + "1)\nreturn y"))
    rejects(H + "x = " + "f(" * 10000 + ")" * 10000 + "\n")


def test_string_encoded_tricks_stay_strings():
    # Escapes produce string values, never code: these are valid IR and stay inert literals.
    text = fn('y = param("\\x5f\\x5fimport\\x5f\\x5f(\\x27os\\x27)")\nreturn y')
    module = parse(text)
    assert module.functions[0].body[0].args == ["__import__('os')"]
    rejects(fn("y = param(\"\\u005f_import__\")\nreturn y"), "unsupported escape")
    rejects(fn("y = add(x, \"a\"\n  \"b\")\nreturn y"), "expected '\\)' after arguments")


def test_bytes_input_and_invalid_utf8():
    assert check(GOOD.encode()).body
    err = rejects(GOOD.encode() + b"# \xff\n", "UTF-8")
    assert err.line == GOOD.count("\n") + 1


def test_unknown_ops_and_types_are_configurable():
    text = fn("y = frobnicate(x)\nreturn y")
    rejects(text, "unknown op or function 'frobnicate'")
    assert check(text, ops="*")
    assert check(text, ops={"frobnicate"})
    obj = H + "def f(c: KVCacheX) -> KVCacheX:\n    return c\n"
    rejects(obj, "unknown type 'KVCacheX'")
    assert check(obj, types={"KVCacheX"})


def _mutants(text, n, seed):
    rnd = random.Random(seed)
    alphabet = list("()[],=:-.+*#'\"\\ \n\tax0_1e") + ["__", "lambda", "import", "def ", "return ", "tuple[", "->"]
    for _ in range(n):
        s = text
        for _ in range(rnd.randint(1, 3)):
            i = rnd.randrange(len(s))
            r = rnd.random()
            if r < 0.4:
                s = s[:i] + s[i + 1:]
            elif r < 0.8:
                s = s[:i] + rnd.choice(alphabet) + s[i:]
            else:
                j = rnd.randrange(len(s))
                s = s[:i] + s[j:j + rnd.randint(1, 12)] + s[i:]
        yield s


def test_fuzzed_programs_never_crash_the_checker():
    for s in _mutants(GOOD, 3000, 0):
        try:
            check(s)
        except IRCheckError:
            pass


@requires_parse_and_print
def test_fuzzed_programs_python_and_cpp_agree():
    """On mutants of a valid program both parsers accept the same texts and print the same bytes."""
    accepted = 0
    for s in _mutants(GOOD, 3000, 1):
        try:
            module = parse(s, ops="*", types="*")
        except IRCheckError as e:
            py_error = e
        else:
            py_error = None
        try:
            out = tensorvm._C.parse_and_print(s)
        except tensorvm.VMError as e:
            assert py_error is not None, f"Python accepted what C++ refuses ({e}):\n{s}"
            continue
        assert py_error is None, f"C++ accepted what Python refuses ({py_error}):\n{s}"
        accepted += 1
        assert out == str(module), s
    assert accepted > 100


@pytest.mark.parametrize("body,match", [
    ('y = param("w", 1)\nreturn y', "template"),
    ('y = param("w.{}", 1.5)\nreturn y', "index must be an int"),
    ('y = param("w", bogus=1)\nreturn y', "unknown keyword argument 'bogus'"),
    ("y = param(name=x)\nreturn y", "string literal"),
    ("y = add(x, g)\nreturn y", "can only be passed to while_loop or cond"),
    ("y = add(x, y=g)\nreturn y", "can only be passed to while_loop or cond"),
    ("y, = while_loop(g, g, g)\nreturn y", "can only be passed to while_loop or cond"),
])
def test_loader_rules_for_builtins(body, match):
    text = fn(body) + "\ndef g(x: Tensor) -> Tensor:\n    return x\n"
    rejects(text, match)
    check(text, ops="*")  # the grammar alone allows them (the C++ loader refuses them)


def test_param_forms_accepted():
    check(fn('a = param("w")\nb = param("w.{}", 3)\nc = param(name="w.{}", index=x)\nd = param("w", None)\nreturn a',
             sig="def f(x: int) -> Tensor:"))


@pytest.mark.parametrize("name", ["int", "Any", "ints", "tuple", "MyObject"])
def test_type_names_cannot_be_function_names(name):
    text = H + f"def {name}(x: Tensor) -> Tensor:\n    return x\n\ndef g(c: MyObject) -> Tensor:\n    return c\n"
    with pytest.raises(IRCheckError, match="type name"):
        check(text, ops="*", types="*")
