"""Byte layouts make_seeds.py writes seeds in, with the standard library only: WAV files,
sentencepiece models (a ModelProto in protobuf's wire format, as sentencepiece_model.proto
numbers its fields) and .npz archives of .npy members (as numpy.savez stores them)."""
import base64
import struct
import zipfile
import zlib
from io import BytesIO

# ---- WAV (io/wav_file.cpp)


def chunk(tag, body):
    return tag + struct.pack("<I", len(body)) + body + b"\0" * (len(body) & 1)


def fmt_chunk(fmt, channels, rate, bits, extensible=False):
    block = channels * bits // 8
    body = struct.pack("<HHIIHH", 0xFFFE if extensible else fmt, channels, rate, rate * block, block, bits)
    if extensible:  # cbSize, valid bits, channel mask, then the sub-format GUID (its first two bytes: the format)
        body += struct.pack("<HHI", 22, bits, 4) + struct.pack("<H", fmt) + bytes(14)
    return chunk(b"fmt ", body)


def wav(chunks, riff_size=None):
    body = b"WAVE" + b"".join(chunks)
    return b"RIFF" + struct.pack("<I", len(body) if riff_size is None else riff_size) + body


# ---- protobuf wire format, for sentencepiece models


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field_bytes(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def field_varint(number, v):
    return varint(number << 3) + varint(v)


def field_float(number, f):
    return varint(number << 3 | 5) + struct.pack("<f", f)


NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
UNIGRAM, BPE, WORD, CHAR = 1, 2, 3, 4


# A precompiled_charsmap (sentencepiece's normalisation rules as a darts-clone trie and
# the replacement strings), zlib-compressed: the one sentencepiece 0.2.3 writes for the
# rules A->a, B->b, U+FB01 (fi ligature)->"fi", U+2460 (circled 1)->"1"
# (normalization_rule_tsv of a unigram model trained on a few lines).
SMALL_CHARSMAP = zlib.decompress(base64.b64decode(
    "eNod0wXMEEQUAOCDAZsMEKVBQLobpCWku7t+4gekQRr1B6RRupvRMTqUTqW7u6VTFMzv97Zv7+3ddtu7exdiBStGKPNBCGVT"
    "hBAzhCilqAljY4b5saP3QtQq1cHxQ4gjj6sgDfH4kAR8REIS8TFJSEwykuLYkJxUpCQ1n5CWNKTjUzKQnkxkJAuZyUZWcpCd"
    "XOQkD7nJR14KkJ9CFKQwn1GUIhSnGCUpQSk+pwyl+YKylKccFalAZSpRlSpUpxo1qUFtalGXOtSnHg1pQGMa0ZQmNKcZLWlB"
    "BK1oQ2va0Zb2RNKRDnTiS7rQmW50pQfd6UVPevMVfelDf/oxkAF8zSC+5RsGRz8yQxnCML5jBMMZxUjGMJrvGcs4fmAC45nE"
    "RKYwmWlMZQbTmcVM5jCbecxlAfO5fTGEheJiFrGUJSxnGStZwWpWsYbnBmGduJYNrGcTG9nCZn5kK9v4iR1sZxc72cNu9rGX"
    "A+znZw5yiF84wmGOcZQTHOcUJznDac5xlguc5xJaC1e4zDWucoPr3OImd6LvgHvc5QH3ecivPOYRT3kS3TvPeMkLXvOK33jD"
    "77zlHX/wJ+/5m7/4l3/+/z8R5i6yY/gPE8SIRg=="))


def spm_model(pieces, model_type=UNIGRAM, byte_fallback=False, charsmap=b"", add_dummy_prefix=True,
              remove_extra_whitespaces=True):
    """A ModelProto: pieces (SentencePiece: piece 1, score 2, type 3), trainer_spec 2
    (model_type 3, byte_fallback 35), normalizer_spec 3 (name 1, precompiled_charsmap 2,
    add_dummy_prefix 3, remove_extra_whitespaces 4, escape_whitespaces 5)."""
    out = b""
    for piece, score, kind in pieces:
        out += field_bytes(1, field_bytes(1, piece.encode()) + field_float(2, score) + field_varint(3, kind))
    trainer = field_varint(3, model_type) + (field_varint(35, 1) if byte_fallback else b"")
    out += field_bytes(2, trainer)
    normalizer = (field_bytes(1, b"user_defined" if charsmap else b"identity") +
                  (field_bytes(2, charsmap) if charsmap else b"") + field_varint(3, int(add_dummy_prefix)) +
                  field_varint(4, int(remove_extra_whitespaces)) + field_varint(5, 1))
    return out + field_bytes(3, normalizer)


# ---- .npz (io/npz.cpp)

NPY_DESCR = {"F32": ("<f4", "f"), "I64": ("<i8", "q"), "I32": ("<i4", "i"), "BOOL": ("|b1", "?"), "F64": ("<f8", "d")}


def npy(dtype, shape, values):
    descr, code = NPY_DESCR[dtype]
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    header += " " * ((-(10 + len(header) + 1)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack(
        f"<{len(values)}{code}", *values)


def npz(arrays):
    """arrays: (name, dtype, shape, values); stored members with a fixed date, as np.savez."""
    buf = BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, dtype, shape, values in arrays:
            z.writestr(zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0)), npy(dtype, shape, values))
    return buf.getvalue()
