#!/usr/bin/env python3
"""Writes the seed corpora and the IR dictionary of the fuzz targets (tests/fuzz/README.md).

    python3 tests/fuzz/make_seeds.py [--marian DIR]

Seeds are real programs: the IR texts of the C++ tests (tests/cpp), the example of
docs/ir.md, small programs that exercise every op family on the harness's inputs
(f32[2, 3] and i64[2, 3] tensors, ints 2, floats 0.5), and safetensors files laid out
as io::write_safetensors writes them. The tokenizer targets get tokenizer.json files of
each supported shape and small sentencepiece models (seed_formats.py), fuzz_wav WAV
files of each format, fuzz_bundle programs with a bundle that passes and one that
fails. --marian adds a program directory imported by the tests (tiny-marian.tvm:
program.py to the IR corpus). Needs only the standard library.
"""
import argparse
import hashlib
import json
import re
import struct
from pathlib import Path

import seed_formats as sf

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
    """io::write_safetensors' layout: the data section at a multiple of 8, tensors 64-aligned."""
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


def dict_entry(word):
    """A libFuzzer dictionary line: the bytes quoted, with \\, " and non-printable bytes escaped."""
    data = word.encode() if isinstance(word, str) else word
    body = "".join("\\" + chr(b) if b in b'\\"' else chr(b) if 32 <= b < 127 else f"\\x{b:02x}" for b in data)
    return f'"{body}"'


def write_dict(name, comment, words):
    (HERE / f"{name}.dict").write_text(f"# {comment} (written by make_seeds.py)\n" +
                                       "\n".join(dict_entry(w) for w in words) + "\n")


# tokenizer.json files of each shape text/byte_bpe.cpp reads ("\u0120" is GPT-2's space
# byte, "\u2581" sentencepiece's), each with a text to encode.
TINY_BPE = {
    "added_tokens": [{"id": 5, "content": "<|eot|>", "special": True}],
    "normalizer": None,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
    "post_processor": None,
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "\u0120": 2, "aa": 3, "\u0120b": 4},
              "merges": ["a a", ["\u0120", "b"]]},
}


def byte_vocab():
    """GPT-2's printable stand-ins of the 256 bytes, as a vocabulary."""
    chars, n = [], 0
    for b in range(256):
        printable = 0x21 <= b <= 0x7e or 0xa1 <= b <= 0xac or 0xae <= b <= 0xff
        chars.append(chr(b) if printable else chr(256 + n))
        n += not printable
    return {c: i for i, c in enumerate(chars)}


def tokenizer_json_seeds():
    full = byte_vocab()
    full.update({"\u0120t": 256, "he": 257, "\u0120the": 258, "<|begin|>": 259})
    llama3 = {
        "added_tokens": [{"id": 259, "content": "<|begin|>", "special": True, "normalized": False}],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": r"(?i:'s|'t)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+|\s+"},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]},
        "post_processor": {"type": "Sequence", "processors": [
            {"type": "ByteLevel"},
            {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|begin|>", "type_id": 0}},
                                                      {"Sequence": {"id": "A", "type_id": 0}}],
             "special_tokens": {"<|begin|>": {"id": "<|begin|>", "ids": [259]}}}]},
        "model": {"type": "BPE", "ignore_merges": True, "vocab": full,
                  "merges": [["\u0120", "t"], ["h", "e"], ["\u0120t", "he"]]},
    }
    whisper = {
        "added_tokens": [{"id": 259 + i, "content": t, "special": True}
                         for i, t in enumerate(["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|transcribe|>",
                                                "<|notimestamps|>", "<|startofprev|>"])],
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "use_regex": True},
        "post_processor": {"type": "RobertaProcessing", "cls": ["<|startoftranscript|>", 260],
                           "sep": ["<|endoftext|>", 259]},
        "model": {"type": "BPE", "vocab": dict(full, **{"<|begin|>": 265}), "merges": ["\u0120 t", "h e"]},
    }
    spm_vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    spm_vocab.update({f"<0x{b:02X}>": 3 + b for b in range(256)})
    for piece in ["\u2581", "a", "b", "c", "\u2581a", "ab", "\u2581ab", "\u00e9"]:
        spm_vocab[piece] = len(spm_vocab)
    llama2 = {
        "added_tokens": [{"id": 0, "content": "<unk>", "special": True}, {"id": 1, "content": "<s>", "special": True},
                         {"id": 2, "content": "</s>", "special": True},
                         {"id": len(spm_vocab), "content": "<extra>", "special": False, "normalized": True}],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                                    {"Sequence": {"id": "A", "type_id": 0}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "byte_fallback": True, "fuse_unk": True, "unk_token": "<unk>", "vocab": spm_vocab,
                  "merges": [["\u2581", "a"], ["a", "b"], ["\u2581a", "b"]]},
    }
    gemma = dict(llama2, normalizer={"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
                 decoder={"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "})
    config = b'{"clean_up_tokenization_spaces": true}'
    docs = [(TINY_BPE, "aaa b<|eot|>a", b""), (llama3, "The the 1234 caf\u00e9 e\u0301t\u00e9 <|begin|>!", b""),
            (whisper, "<|startofprev|> the<|0.00|> he <|1.50|> ,the .", config),
            (llama2, "ab a \u00e9 \u6771 c<extra>ab  x", b""), (gemma, "ab\u2581a \U0001f642", config)]
    for doc, text, cfg in docs:
        write("tokenizer_json", json.dumps(doc, ensure_ascii=False).encode() + b"\0" + text.encode() +
              (b"\0" + cfg if cfg else b""))
    write_dict("tokenizer_json", "tokenizer.json words for fuzz_tokenizer_json", [
        "model", "type", "BPE", "vocab", "merges", "byte_fallback", "fuse_unk", "unk_token", "ignore_merges",
        "dropout", "continuing_subword_prefix", "end_of_word_suffix", "normalizer", "normalizers", "Sequence",
        "Prepend", "prepend", "Replace", "pattern", "String", "Regex", "content", "NFC", "pre_tokenizer",
        "pretokenizers", "ByteLevel", "add_prefix_space", "use_regex", "Split", "behavior", "Isolated", "invert",
        "post_processor", "processors", "RobertaProcessing", "cls", "sep", "TemplateProcessing", "single",
        "special_tokens", "SpecialToken", "ids", "id", "decoder", "decoders", "ByteFallback", "Fuse", "Strip",
        "start", "stop", "added_tokens", "special", "normalized", "lstrip", "rstrip", "single_word",
        "clean_up_tokenization_spaces", "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output",
        "<0x41>", "\u2581", "\u0120", "<|startoftranscript|>", "<|startofprev|>", "<|0.00|>", "true", "null"])


def spm_seeds():
    """Sentencepiece models, each with a text and the kind that reads it (the first byte:
    0 Marian, 1 M2M100, 2 NLLB, 3 T5)."""
    specials = [("<unk>", 0.0, sf.UNKNOWN), ("<s>", 0.0, sf.CONTROL), ("</s>", 0.0, sf.CONTROL)]
    unigram = specials + [("\u2581", -2.0, sf.NORMAL), ("a", -3.0, sf.NORMAL), ("b", -3.0, sf.NORMAL),
                          ("\u2581a", -2.5, sf.NORMAL), ("ab", -2.8, sf.NORMAL), ("\u2581ab", -2.0, sf.NORMAL),
                          ("c", -4.0, sf.NORMAL), ("fi", -3.5, sf.NORMAL), ("<sep>", 0.0, sf.USER_DEFINED),
                          ("zz", 0.0, sf.UNUSED)]
    bpe = specials + [("\u2581", -1.0, sf.NORMAL), ("a", -2.0, sf.NORMAL), ("b", -3.0, sf.NORMAL),
                      ("\u2581a", -4.0, sf.NORMAL), ("ab", -5.0, sf.NORMAL), ("\u2581ab", -6.0, sf.NORMAL)]
    byte_bpe = bpe + [(f"<0x{b:02X}>", 0.0, sf.BYTE) for b in range(256)]
    models = [
        (0, "ab a abc<sep>a \u6771  ab", sf.spm_model(unigram)),
        (3, "AB \ufb01 \u2460 ab", sf.spm_model(unigram, charsmap=sf.SMALL_CHARSMAP)),
        (0, "Ab  b\ufb01", sf.spm_model(unigram, charsmap=sf.SMALL_CHARSMAP, add_dummy_prefix=False)),
        (2, "ab a b\t", sf.spm_model(bpe, model_type=sf.BPE)),
        (1, "ab \u00e9\U0001f642 a", sf.spm_model(byte_bpe, model_type=sf.BPE, byte_fallback=True)),
        (3, "abc ab", sf.spm_model(bpe, model_type=sf.CHAR, remove_extra_whitespaces=False)),
        (1, "a ab b", sf.spm_model(bpe, model_type=sf.WORD)),
    ]
    for kind, text, model in models:
        write("spm", bytes([kind]) + text.encode() + b"\0" + model)
    write_dict("spm", "sentencepiece words for fuzz_spm", [
        "\u2581", "<unk>", "<s>", "</s>", "<pad>", "<0x41>", "<sep>", "identity", "user_defined", "nmt_nfkc",
        sf.field_varint(3, sf.BPE), sf.field_varint(35, 1), sf.field_varint(3, sf.USER_DEFINED),
        sf.field_varint(3, sf.BYTE), sf.field_varint(3, sf.CONTROL)])


def wav_seeds():
    pcm = struct.pack("<4h", 0, 16384, -32768, 32767)
    floats = struct.pack("<3f", 0.25, -0.75, float("nan"))
    seeds = [
        sf.wav([sf.fmt_chunk(1, 1, 16000, 16), sf.chunk(b"LIST", b"abc"), sf.chunk(b"data", pcm)]),
        sf.wav([sf.fmt_chunk(3, 1, 16000, 32), sf.chunk(b"data", floats)]),
        sf.wav([sf.fmt_chunk(1, 1, 16000, 16, extensible=True), sf.chunk(b"data", pcm)]),
        sf.wav([sf.fmt_chunk(3, 1, 16000, 32, extensible=True), sf.chunk(b"data", floats)]),
        sf.wav([sf.fmt_chunk(1, 2, 16000, 16), sf.chunk(b"data", pcm)]),
        sf.wav([sf.fmt_chunk(1, 1, 8000, 16), sf.chunk(b"data", pcm)]),
        sf.wav([sf.fmt_chunk(1, 1, 16000, 24), sf.chunk(b"data", pcm[:6])]),
        # streamed: the data chunk's size left at its maximum
        sf.wav([sf.fmt_chunk(1, 1, 16000, 16), b"data\xff\xff\xff\xff" + pcm], riff_size=0xFFFFFFFF),
        sf.wav([sf.fmt_chunk(1, 1, 16000, 16), b"data\x10\x00\x00\x00" + pcm[:3]]),  # truncated
    ]
    for w in seeds:
        write("wav", w)
    write_dict("wav", "RIFF words for fuzz_wav", ["RIFF", "WAVE", "fmt ", "data", "LIST", b"\xff\xff\xff\xff",
                                                 b"\x01\x00", b"\x03\x00", b"\xfe\xff", b"\x80\x3e\x00\x00"])


SEP = b"\n--8<--\n"  # fuzz_bundle.cpp's kSeparator
META = b'{"format": "tensorvm-ir", "version": 1}'


def bundle_seeds(ir_words):
    def manifest(*cases):
        return json.dumps({"format": "tensorvm-bundle", "version": 1, "cases": list(cases)}, indent=2).encode()

    close = {"dtype": "F32", "compare": "close", "atol": 1e-4, "rtol": 1e-4}
    # f: x + 1 and n + 1, arrays as safetensors (as pycompiler/bundle.py writes them); passes
    f_text = b"""# tensorvm ir 1
def f(x: Tensor, n: int) -> tuple[Tensor, int]:
    y = add(x, 1.0)
    m = add(n, 1)
    return y, m
"""
    x = [0.0, 1.0, -1.5, 2.0, 0.5, 3.0]
    f_arrays = safetensors_bytes([("input.x", "F32", [2, 3], f32(*x)), ("input.n", "I64", [], i64(2)),
                                  ("expected.0", "F32", [2, 3], f32(*[v + 1 for v in x])),
                                  ("expected.1", "I64", [], i64(3))], align=1)
    f_manifest = manifest({"function": "f", "arrays": "bundle-0123456789abcdef.safetensors",
                           "outputs": [dict(close, index=0, shape=[2, 3]),
                                       {"index": 1, "dtype": "I64", "shape": [], "compare": "exact"}]})
    write("bundle", SEP.join([f_text, META, f_manifest, f_arrays]))
    # g: linear with a weight, arrays as .npz, the weights borrowed or copied; a second
    # case names an output g does not have (a failed verdict)
    g_text = b"""# tensorvm ir 1
def g(x: Tensor) -> Tensor:
    w = param("w")
    y = linear(x, w)
    return y
"""
    w = [1.0, 0.0, 2.0, 0.0, 1.0, -1.0]
    y = [sum(x[r * 3 + k] * w[o * 3 + k] for k in range(3)) for r in range(2) for o in range(2)]
    g_arrays = sf.npz([("input.x", "F32", [2, 3], x), ("expected.0", "F32", [2, 2], y)])
    g_manifest = manifest({"function": "g", "arrays": "bundle-g.npz", "outputs": [dict(close, index=0, shape=[2, 2])]},
                          {"function": "g", "arrays": "bundle-g.npz",
                           "outputs": [{"index": 3, "dtype": "F32", "compare": "exact"}]})
    g_weights = safetensors_bytes([("w", "F32", [2, 3], f32(*w))])
    write("bundle", SEP.join([g_text, META, g_manifest, g_arrays, g_weights]))
    # h: an absent Any input returned as None, a float64 scalar compared exactly and not equal
    h_text = b"""# tensorvm ir 1
def h(x: Any, s: float) -> tuple[Any, float]:
    return x, s
"""
    h_arrays = safetensors_bytes([("input.s", "F64", [], struct.pack("<d", 0.5)),
                                  ("expected.1", "F64", [], struct.pack("<d", float("nan")))], align=1)
    h_manifest = manifest({"function": "h", "arrays": "bundle-h.safetensors",
                           "outputs": [{"index": 0, "none": True}, {"index": 1, "compare": "exact"}]})
    write("bundle", SEP.join([h_text, META, h_manifest, h_arrays]))
    write_dict("bundle", "IR and bundle words for fuzz_bundle", ir_words + [
        SEP, "tensorvm-bundle", "tensorvm-ir", "format", "version", "cases", "function", "arrays", "outputs",
        "index", "none", "compare", "exact", "close", "atol", "rtol", "dtype", "shape", "input.", "expected.",
        "data_offsets", "F64", "I64", "F32", "BOOL", "I32", "I8", b"PK\x03\x04", b"\x93NUMPY", "'descr'", "'<f4'",
        "'fortran_order'", "'shape'"])


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
    write_dict("ir", "IR words for fuzz_ir and fuzz_program", words)

    tokenizer_json_seeds()
    spm_seeds()
    wav_seeds()
    bundle_seeds(words)


if __name__ == "__main__":
    main()
