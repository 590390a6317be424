#!/usr/bin/env python3
"""Writes the seed corpora and the IR dictionary of the fuzz targets (tests/fuzz/README.md).

    python3 tests/fuzz/make_seeds.py [--marian DIR]

Seeds are real programs: the IR texts of the C++ tests (tests/cpp), the example of
docs/ir.md, small programs that exercise every op family on the harness's inputs
(f32[2, 3] and i64[2, 3] tensors, ints 2, floats 0.5), and safetensors files laid out
as ir::write_safetensors writes them. --marian adds a program directory imported by
the tests (tiny-marian.tvm: program.py to the IR corpus). Needs only the standard library.
"""
import argparse
import hashlib
import json
import re
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

OP_PROGRAMS = [
    """def f(x: Tensor, ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    a = add(x, 1.0)
    b = mul(a, x)
    c = sub(b, 0.5)
    d = div(c, 2.0)
    e = exp(d)
    g = log(e)
    h = tanh(g)
    i = sigmoid(h)
    j = gelu(i, approximate="tanh")
    k = silu(j)
    l = relu(k)
    gz = gt(x, 0.0)
    nl = neg(l)
    m = where(gz, l, nl)
    n = clamp(m, min=-1.0, max=1.0)
    an = abs(n)
    o = pow(an, 2.0)
    p = add(ids, 1)
    q = floordiv(p, 2)
    r = remainder(q, 3)
    ax = abs(x)
    sq = sqrt(ax)
    return o, r, sq
""",
    """def f(x: Tensor, ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    s = softmax(x, -1)
    l = log_softmax(x, 1)
    m = sum(s, [1])
    a = argmax(x, -1)
    v, i = topk(x, 2, -1)
    c = cumsum(ids, 1)
    mx = max(x, 0)
    mn = mean(x, [0, 1])
    return l, c, v
""",
    """def f(x: Tensor, ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    r = reshape(x, [3, 2])
    t = transpose(r, 0, 1)
    p = permute(x, [1, 0])
    u = unsqueeze(x, 0)
    s = squeeze(u, 0)
    c = concat(x, s, dim=0)
    u0 = unsqueeze(x, 0)
    e = expand(u0, [2, 2, 3])
    sl = slice(x, 1, 0, 2)
    ri = repeat_interleave(x, 2, 0)
    n = numel(x)
    d = size(x, 1)
    sh = shape(x)
    return c, e, ri
""",
    """def f(x: Tensor, ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    ix = remainder(ids, 3)
    g = gather(x, 1, ix)
    ar = arange(0, 2)
    i = index_select(x, 0, ar)
    w = ones([4, 3], dtype="f32")
    e = embedding(ids, w)
    s = scatter(x, 1, ix, g)
    z = zeros_like(x)
    fl = full([2, 2], 7, dtype="i64")
    fx = full_like(x, 0.25)
    t = tensor(3)
    cs = cast(ids, "f32")
    return e, s, cs
""",
    """def f(x: Tensor, ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    w = ones([4, 3], dtype="f32")
    y = linear(x, w)
    xt = transpose(x, 0, 1)
    m = matmul(x, xt)
    g = ones([3], dtype="f32")
    b = zeros([3], dtype="f32")
    n = layer_norm(x, g, b, 1e-05)
    r = rms_norm(x, g, 1e-06)
    q = reshape(x, [1, 1, 2, 3])
    a = attention(q, q, q)
    return y, n, a
""",
    """def f(x: Tensor, flag: bool, n: int) -> tuple[int, Tensor, Tensor]:
    i, acc = while_loop(cond_fn, body_fn, 0, x)
    y = cond(flag, pos, negx, acc)
    m = if_none(None, n)
    return i, y, acc

def cond_fn(i: int, acc: Tensor) -> bool:
    c = lt(i, 3)
    return c

def body_fn(i: int, acc: Tensor) -> tuple[int, Tensor]:
    j = add(i, 1)
    a = add(acc, 1.0)
    return j, a

def pos(x: Tensor) -> Tensor:
    return x

def negx(x: Tensor) -> Tensor:
    y = neg(x)
    return y
""",
    """def f(x: Tensor, ids: Tensor) -> tuple[Tensor, Tensor]:
    e = eq(ids, 1)
    n = ne(ids, 2)
    a = logical_and(e, n)
    o = logical_or(e, n)
    x2 = logical_xor(a, o)
    t = logical_not(x2)
    al = all(t)
    an = any(t)
    mf = masked_fill(x, t, -1.0)
    mm = maximum(x, mf)
    mi = minimum(x, mf)
    return mm, mi
""",
]


def safetensors_bytes(tensors, metadata=None, align=64):
    """ir::write_safetensors' layout: the data section at a multiple of 8, tensors 64-aligned."""
    header, data = {}, b""
    for name, dtype, shape, payload in tensors:
        data += b"\0" * (-len(data) % align)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + data


def f32(*values):
    return struct.pack(f"<{len(values)}f", *values)


def i64(*values):
    return struct.pack(f"<{len(values)}q", *values)


def cpp_programs():
    """IR texts in raw string literals of the C++ tests."""
    found = []
    for path in sorted((ROOT / "tests" / "cpp").glob("*.[ch]*")):
        text = path.read_text()
        for m in re.finditer(r'R"(\w*)\((.*?)\)\1"', text, re.S):
            body = m.group(2)
            if "def " in body and "->" in body:
                body = body if body.endswith("\n") else body + "\n"
                found.append(body if body.startswith("# tensorvm ir") else "# tensorvm ir 1\n" + body)
    return found


def write(corpus, data):
    d = HERE / "corpus" / corpus
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--marian", type=Path, help="a program directory made by the tests (tiny-marian.tvm)")
    args = ap.parse_args()

    linear_weights = safetensors_bytes([("layers.0.w", "F32", [2, 3], f32(1, 0, 0, 0, 1, 0)),
                                        ("layers.1.w", "F32", [2, 3], f32(0, 1, 0, 0, 0, 1))])
    weights = [
        safetensors_bytes([]),
        linear_weights,
        safetensors_bytes([("b", "F32", [2], f32(0.5, -0.5)), ("l.0.w", "F32", [2, 3], f32(*range(6))),
                           ("l.1.w", "F32", [2, 2], f32(1, 0, 0, 1))], {"format": "pt"}),
        safetensors_bytes([("ids", "I64", [3], i64(1, 2, 3)), ("mask", "BOOL", [2, 2], b"\1\0\0\1"),
                           ("q", "I8", [2, 2], b"\x01\xff\x7f\x80"), ("h", "F16", [1], b"\x00\x3c"),
                           ("empty", "F32", [0, 4], b""), ("scalar", "I32", [], b"\7\0\0\0")], align=1),
    ]
    for w in weights:
        write("safetensors", w)

    OPS = ["# tensorvm ir 1\n" + p for p in OP_PROGRAMS]
    programs = cpp_programs() + OPS
    for p in programs:
        write("ir", p.encode())
    for p in OPS:
        write("program", p.encode())
    weighted = [p for p in cpp_programs() if "param(" in p]
    for p in weighted:
        write("program", p.encode() + b"\0" + linear_weights)
    for p in cpp_programs():
        if "param(" not in p:
            write("program", p.encode())
    layered = """# tensorvm ir 1
def layer(x: Tensor, i: int) -> Tensor:
    l_w = param("l.{}.w", i)
    b = param("b")
    linear_0 = linear(x, l_w, b)
    return linear_0

def forward(x: Tensor, scale: float, n: int) -> tuple[Tensor, int]:
    x2 = reshape(x, [3, 2])
    layer_0 = layer(x2, 1)
    mul_0 = mul(layer_0, scale)
    add_0 = add(n, 1)
    return mul_0, add_0
"""
    write("program", layered.encode() + b"\0" + weights[2])
    if args.marian:
        write("ir", (args.marian / "program.py").read_bytes())

    # The IR dictionary: op names from the generated op reference, then the grammar's words.
    ops = re.findall(r"^### (\w+)$", (ROOT / "docs" / "ops.md").read_text(), re.M)
    words = ops + ["def", "return", "param", "while_loop", "cond", "Tensor", "int", "float", "bool", "str",
                   "Any", "KVCache", "None", "True", "False", "tuple[", "->", "# tensorvm ir 1",
                   "inf", "nan", 'dtype="f32"', 'dtype="i64"', 'dtype="bool"', "    "]
    lines = [f'"{w}"'.replace("\\", "\\\\") if '"' not in w else '"' + w.replace('"', '\\"') + '"' for w in words]
    (HERE / "ir.dict").write_text("# IR words for fuzz_ir and fuzz_program (written by make_seeds.py)\n" +
                                  "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
