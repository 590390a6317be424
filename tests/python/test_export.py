"""Program directories: the safetensors reader/writer, atomic export, load and run in the VM."""
import json
import os
import struct

import numpy as np
import pytest

import tensorvm
from tensorvm import Tensor
from tensorvm import ops as T
from tensorvm.pycompiler import weights_io
from tensorvm.pycompiler.program_dir import ProgramError, write_program_dir

from pyc_helpers import reference_fallbacks, requires_vm, write_program  # noqa: F401 (fixture)

# ---------------------------------------------------------------- weights_io


def _all_dtypes(rng):
    return {
        "f32": rng.standard_normal((3, 5)).astype(np.float32),
        "f64": rng.standard_normal(7),
        "f16": rng.standard_normal((2, 2)).astype(np.float16),
        "i64": rng.integers(-2**62, 2**62, size=(4,)),
        "i32": rng.integers(-5, 5, size=(2, 3)).astype(np.int32),
        "i16": np.arange(3, dtype=np.int16),
        "i8": np.array([-128, 0, 127], np.int8),
        "u8": np.array([0, 255], np.uint8),
        "bool": np.array([[True, False], [False, True]]),
        "scalar": np.array(3.5, np.float32),
        "empty": np.zeros((0, 4), np.float32),
        "big-endian": np.arange(5, dtype=">i4"),
        "strided": np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2],
        "unicode name é": np.ones(1, np.float32),
    }


def test_round_trip_all_dtypes(tmp_path, rng):
    tensors = _all_dtypes(rng)
    path = tmp_path / "w.safetensors"
    weights_io.write(path, tensors, metadata={"k": "v"})
    got, meta = weights_io.read(path)
    assert meta == {"k": "v"}
    assert list(got) == list(tensors)
    for k, v in tensors.items():
        assert got[k].shape == v.shape and got[k].dtype == v.dtype.newbyteorder("=") and np.array_equal(got[k], v), k
        assert not got[k].flags.writeable
    assert os.listdir(tmp_path) == ["w.safetensors"]  # no temp file left


def test_layout_is_aligned(tmp_path, rng):
    tensors = {"a": np.ones(3, np.int8), "b": np.ones((5, 7), np.float32), "c": np.ones(1, np.int64)}
    path = tmp_path / "w.safetensors"
    weights_io.write(path, tensors)
    entries, _, start = weights_io.read_header(path)
    assert start % 64 == 0
    assert all(e.begin % 64 == 0 for e in entries.values())
    raw = path.read_bytes()
    assert raw[start + 3:start + 64] == b"\0" * 61  # zero gaps
    assert np.frombuffer(raw, np.float32, 35, start + entries["b"].begin).tolist() == [1.0] * 35


def test_interop_with_safetensors_package(tmp_path, rng):
    st = pytest.importorskip("safetensors.numpy")
    tensors = {k: v for k, v in _all_dtypes(rng).items() if k not in ("big-endian", "strided")}
    theirs = tmp_path / "theirs.safetensors"
    st.save_file(tensors, str(theirs), metadata={"m": "1"})
    got, meta = weights_io.read(theirs)  # packed back to back, unaligned offsets
    assert meta == {"m": "1"}
    for k, v in tensors.items():
        assert np.array_equal(got[k], v)
    ours = tmp_path / "ours.safetensors"
    weights_io.write(ours, tensors, alignment=1)  # what the reference library accepts
    back = st.load_file(str(ours))
    for k, v in tensors.items():
        assert np.array_equal(back[k], v)


def test_bf16_reads_as_ml_dtypes_bfloat16(tmp_path):
    """BF16 stays 16-bit, as the VM loads it: an ml_dtypes.bfloat16 array."""
    import ml_dtypes

    vals = np.array([1.0, -2.5, 3.140625], np.float32)
    raw = (vals.view(np.uint32) >> 16).astype("<u2").tobytes()
    header = json.dumps({"x": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}).encode()
    path = tmp_path / "bf16.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + raw)
    got, _ = weights_io.read(path)
    assert got["x"].dtype == ml_dtypes.bfloat16 and got["x"].astype(np.float32).tolist() == vals.tolist()


def test_16bit_round_trip_through_the_writer_and_the_vm(tmp_path, rng):
    """f16 and bf16 numpy weights are written as F16/BF16, read back bit for bit by
    weights_io and by the VM (which hands them back as float16 / bfloat16 arrays)."""
    import ml_dtypes

    x = np.concatenate([rng.standard_normal(37).astype(np.float32), [np.inf, -np.inf, 0.0, -0.0, 6e4]]).astype(np.float32)
    tensors = {"h": x.astype(np.float16).reshape(7, 6), "b": x.astype(ml_dtypes.bfloat16), "odd": np.ones(3, np.int8),
               "h1": x[:5].astype(np.float16)}
    path = tmp_path / "w.safetensors"
    weights_io.write(path, tensors, alignment=1)  # "h1" lands unaligned: the VM copies it
    entries, _, _ = weights_io.read_header(path)
    assert {k: e.dtype for k, e in entries.items()} == {"h": "F16", "b": "BF16", "odd": "I8", "h1": "F16"}
    got, _ = weights_io.read(path)
    for k, v in tensors.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape
        assert got[k].tobytes() == v.tobytes(), k
    prog = write_program(tmp_path / "prog", "")
    (prog / "weights.safetensors").write_bytes(path.read_bytes())
    (prog / "program.py").write_text(
        "# tensorvm ir 1\n"
        "def main() -> Tensor:\n"
        "    h = param(\"h\")\n"
        "    b = param(\"b\")\n"
        "    h1 = param(\"h1\")\n"
        "    return h, b, h1\n".replace("-> Tensor", "-> tuple[Tensor, Tensor, Tensor]"))
    pytest.importorskip("tensorvm._C")
    program = tensorvm.load(prog)
    h, b, h1 = program.run("main")
    for mine, replayed in zip((h, b, h1), program.replay("main")):  # the reference reads the same arrays
        assert mine.dtype == replayed.dtype and mine.tobytes() == replayed.tobytes()
    assert h.dtype == np.float16 and h.tobytes() == tensors["h"].tobytes()
    assert b.dtype == ml_dtypes.bfloat16 and b.tobytes() == tensors["b"].tobytes()
    assert h1.tobytes() == tensors["h1"].tobytes()
    assert not h.flags.writeable  # a weight


def test_16bit_hostile_sizes_are_refused(tmp_path):
    for dt, shape, nbytes in [("F16", [3], 4), ("BF16", [2], 8), ("F16", [2, 2], 6)]:
        header = json.dumps({"x": {"dtype": dt, "shape": shape, "data_offsets": [0, nbytes]}}).encode()
        path = tmp_path / f"bad_{dt}.safetensors"
        path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * nbytes)
        with pytest.raises(weights_io.WeightsError, match=rf"{dt}\[.*\] needs"):
            weights_io.read(path)


@pytest.mark.parametrize("mutate,match", [
    (lambda h, d: (b"\x01\x00", b""), "shorter than 8"),
    (lambda h, d: (struct.pack("<Q", 10**9) + h[8:], d), "header length"),
    (lambda h, d: (struct.pack("<Q", 5) + b"nope!", d), "not valid JSON"),
    (lambda h, d: (_hdr([1, 2]), d), "not a JSON object"),
    (lambda h, d: (_hdr({"x": {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}}), d), "unsupported dtype"),
    (lambda h, d: (_hdr({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}), d), "invalid shape"),
    (lambda h, d: (_hdr({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}), d), "needs 8 bytes"),
    (lambda h, d: (_hdr({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 400]}}), d), "invalid data_offsets"),
    (lambda h, d: (_hdr({"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}), d), "invalid data_offsets"),
    (lambda h, d: (_hdr({"x": [1]}), d), "not an object"),
    (lambda h, d: (_hdr({"__metadata__": [1]}), d), "__metadata__"),
])
def test_bad_files_are_refused(tmp_path, mutate, match):
    path = tmp_path / "good.safetensors"
    weights_io.write(path, {"x": np.ones(1, np.float32)})
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    head, data = raw[:8 + n], raw[8 + n:]
    h, d = mutate(head, data)
    path.write_bytes(h + d)
    with pytest.raises(weights_io.WeightsError, match=match):
        weights_io.read(path)


def _hdr(obj):
    b = json.dumps(obj).encode()
    return struct.pack("<Q", len(b)) + b


def test_write_refuses_bad_input(tmp_path):
    with pytest.raises(weights_io.WeightsError, match="no safetensors equivalent"):
        weights_io.write(tmp_path / "w", {"c": np.ones(2, np.complex64)})
    with pytest.raises(weights_io.WeightsError, match="invalid tensor name"):
        weights_io.write(tmp_path / "w", {"__metadata__": np.ones(2)})
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- export


def _builder(rng):
    w = {f"l.{i}.w": rng.standard_normal((4, 4)).astype(np.float32) for i in range(2)}
    w["unused"] = np.ones(10, np.float32)
    pb = tensorvm.ProgramBuilder(weights=w, meta={"model": "tiny", "eos": 2})

    @pb.function
    def layer(x: Tensor, i: int) -> Tensor:
        return T.linear(x, T.param("l.{}.w", i))

    @pb.function
    def forward(x: Tensor) -> Tensor:
        return layer(layer(x, 0), 1)

    return pb


def test_export_writes_the_program_directory(tmp_path, rng):
    pb = _builder(rng)
    out = pb.save(tmp_path / "m.tvm")
    assert out == tmp_path / "m.tvm"
    assert sorted(os.listdir(out)) == ["meta.json", "program.py", "weights.safetensors"]
    assert (out / "program.py").read_text() == str(pb.program())
    assert json.loads((out / "meta.json").read_text()) == {"format": "tensorvm-ir", "version": 1, "model": "tiny", "eos": 2}
    w, _ = weights_io.read(out / "weights.safetensors")
    assert list(w) == ["l.0.w", "l.1.w"]  # only what the IR uses
    assert np.array_equal(w["l.1.w"], pb.weights["l.1.w"])
    assert sorted(os.listdir(tmp_path)) == ["m.tvm"]  # no temp dirs left


def test_export_replaces_an_existing_program_atomically(tmp_path, rng):
    pb = _builder(rng)
    target = tmp_path / "m.tvm"
    tensorvm.export(pb, target)
    first = (target / "program.py").read_text()
    pb.meta["model"] = "second"
    tensorvm.export(pb, target)
    assert json.loads((target / "meta.json").read_text())["model"] == "second"
    assert (target / "program.py").read_text() == first
    assert sorted(os.listdir(tmp_path)) == ["m.tvm"]


def test_export_refuses_to_replace_other_things(tmp_path, rng):
    pb = _builder(rng)
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "data.txt").write_text("keep me")
    with pytest.raises(ProgramError, match="not a program directory"):
        pb.save(tmp_path / "precious")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ProgramError, match="not a program directory"):
        pb.save(tmp_path / "file")
    assert (tmp_path / "precious" / "data.txt").read_text() == "keep me"
    assert sorted(os.listdir(tmp_path)) == ["file", "precious"]


def test_failed_export_leaves_nothing_behind(tmp_path, rng):
    pb = _builder(rng)
    pb.meta["bad"] = object()
    with pytest.raises(ProgramError, match="JSON"):
        pb.save(tmp_path / "m.tvm")
    pb.meta = {"format": "other"}
    with pytest.raises(ProgramError, match="reserved"):
        pb.save(tmp_path / "m.tvm")
    assert os.listdir(tmp_path) == []
    with pytest.raises(weights_io.WeightsError):
        write_program_dir(tmp_path / "x.tvm", "# tensorvm ir 1\n", {"w": np.ones((2,), np.complex64)}, {})
    assert os.listdir(tmp_path) == []


def test_load_reads_ir_meta_and_functions(tmp_path, rng):
    pb = _builder(rng)
    prog = tensorvm.load(pb.save(tmp_path / "m.tvm"))
    assert prog.functions == ["layer", "forward"]
    assert prog.ir == str(pb.program())
    assert prog.meta["model"] == "tiny"
    assert prog.signature("layer") == "def layer(x: Tensor, i: int) -> Tensor:"
    assert [w[:3] for w in prog.weights_info()] == [("l.0.w", "F32", (4, 4)), ("l.1.w", "F32", (4, 4))]
    with pytest.raises(KeyError, match="no function 'nope'.*layer, forward"):
        prog.run("nope")


@pytest.mark.parametrize("meta,match", [("{", "meta.json"), ('{"format": "onnx"}', "not a tensorvm program"),
                                        ('{"format": "tensorvm-ir", "version": 9}', "unsupported program version")])
def test_load_refuses_bad_meta(tmp_path, rng, meta, match):
    out = _builder(rng).save(tmp_path / "m.tvm")
    (out / "meta.json").write_text(meta)
    with pytest.raises(ProgramError, match=match):
        tensorvm.load(out)


def test_load_refuses_missing_dir(tmp_path):
    with pytest.raises(ProgramError, match="not a program directory"):
        tensorvm.load(tmp_path / "nope")


@requires_vm
def test_run_in_vm_matches_eager_and_replay(tmp_path, rng):
    pb = _builder(rng)
    prog = tensorvm.load(pb.save(tmp_path / "m.tvm"))
    x = rng.standard_normal((3, 4)).astype(np.float32)
    want = _builder_forward(pb, x)
    got = prog.run("forward", x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(prog.replay("forward", x), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(prog.run("layer", x, np.int64(1)), x @ pb.weights["l.1.w"].T, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="takes 1 inputs"):
        prog.run("forward")
    with pytest.raises(TypeError, match="declared int"):
        prog.run("layer", x, 1.5)
    with pytest.raises(tensorvm.VMError, match=r"(?s)linear.*program.py:\d+"):
        prog.run("forward", np.ones((2, 3), np.float32))


def _builder_forward(pb, x):
    return x @ pb.weights["l.0.w"].T @ pb.weights["l.1.w"].T


@requires_vm
def test_run_control_flow_and_scalars_in_vm(tmp_path, reference_fallbacks):
    pb = tensorvm.ProgramBuilder(weights={"w": (np.eye(3) * 2).astype(np.float32)})

    @pb.function
    def count(limit: int, x: Tensor) -> tuple[int, Tensor]:
        def going(i, acc, lim):
            return i < lim

        def step(i, acc, lim):
            return i + 1, T.linear(acc, T.param("w")), lim

        i, acc, _ = tensorvm.while_loop(going, step, 0, x, limit)
        return i, tensorvm.cond(i > 3, lambda a: T.mul(a, 2.0), lambda a: T.neg(a), acc)

    @pb.function
    def scalars(n: int, f: float, b: bool, s: str) -> tuple[int, float, bool, str]:
        return n + 1, f * 2.0, b, s

    @pb.function
    def nothing(x: Tensor) -> None:
        return None

    prog = tensorvm.load(pb.save(tmp_path / "c.tvm"))
    x = np.ones((1, 3), np.float32)
    for limit in (0, 2, 5):
        i, y = prog.run("count", limit, x)
        ri, ry = prog.replay("count", limit, x)
        ei, ey = count(limit, x)
        assert i == ri == ei == limit
        assert np.array_equal(y, ry) and np.array_equal(y, ey)
    assert prog.run("scalars", 3, 1.25, True, "é\n") == (4, 2.5, True, "é\n") == prog.replay("scalars", 3, 1.25, True, "é\n")
    assert prog.run("nothing", x) is None and prog.replay("nothing", x) is None


@requires_vm
def test_objects_cross_the_vm_boundary(tmp_path):
    from tensorvm.pycompiler import registry

    if {"kv_cache", "kv_append", "kv_length"} - set(registry.real_ops()):
        pytest.skip("needs kv ops")
    pb = tensorvm.ProgramBuilder()

    @pb.function
    def init(n: int) -> "KVCache":
        return T.kv_cache(1, 1, 1, 2, n)

    @pb.function
    def push(cache: "KVCache", k: Tensor) -> tuple["KVCache", int, Tensor]:
        ka, va = T.kv_append(cache, 0, k, k)
        return cache, T.kv_length(cache), ka

    prog = tensorvm.load(pb.save(tmp_path / "kv.tvm"))
    k = np.ones((1, 1, 1, 2), np.float32)
    for run in (prog.run, prog.replay):
        cache = run("init", 4)
        same, n1, _ = run("push", cache, k)
        _, n2, keys = run("push", same, 2 * k)
        assert (n1, n2) == (1, 2) and keys[0, 0, :, 0].tolist() == [1, 2]
    assert isinstance(prog.run("init", 1), tensorvm._C.Object) and prog.run("init", 1).type_name == "KVCache"


@requires_vm
@pytest.mark.parametrize("half", ["f16", "bf16"])
def test_program_with_16bit_weights_runs_as_traced(tmp_path, rng, half):
    """A model that stores its weights as float16 / ml_dtypes.bfloat16 arrays: linear and
    embedding take them in every mode (eager C++, the saved program in the VM, replay),
    with the results of the f32 program on the widened weights."""
    import ml_dtypes

    dt = np.float16 if half == "f16" else ml_dtypes.bfloat16
    w16 = {"emb": rng.standard_normal((9, 8)).astype(dt), "proj": rng.standard_normal((5, 8)).astype(dt),
           "bias": rng.standard_normal(5).astype(np.float32)}
    wide = {k: v.astype(np.float32) for k, v in w16.items()}

    def build(weights):
        pb = tensorvm.ProgramBuilder(weights=weights)

        @pb.function
        def forward(ids: Tensor) -> Tensor:
            return T.linear(T.embedding(ids, T.param("emb")), T.param("proj"), T.param("bias"))

        return pb

    ids = np.array([[1, 8, 0]], np.int64)
    prog = tensorvm.load(build(w16).save(tmp_path / "m16.tvm"))
    want = tensorvm.load(build(wide).save(tmp_path / "m32.tvm")).run("forward", ids)
    assert weights_io.read_header(tmp_path / "m16.tvm" / "weights.safetensors")[0]["proj"].dtype == half.upper()
    np.testing.assert_array_equal(prog.run("forward", ids), want)
    np.testing.assert_allclose(prog.replay("forward", ids), want, rtol=1e-5, atol=1e-5)
