"""tensorvm through its C++ runtime: one `generate` call per batch.

The checkpoint is imported once (prepare, untimed); load is `vm::Program::load` plus a
`vm::Session` with the thread count; generate is ONE `Session.run_named("generate")`
call, so the whole loop (encoder, cross-attention cache, KV cache, search, processors,
stopping) runs in C++ and Python only converts the inputs and the result.
"""
from __future__ import annotations

import time
from pathlib import Path

from .base import Engine, EngineUnavailable


class TensorVMEngine(Engine):
    encode_is_separate = True

    def __init__(self, quantize: str = "float32"):
        self.quantize = quantize
        # int4 / w4a8 (issue 29): 4-bit weights, group-wise; the bandwidth block counts their bytes
        self.precision = "float32" if quantize == "float32" else "int4" if quantize in ("int4", "w4a8") else "int8"
        self.name = "tensorvm" if quantize == "float32" else f"tensorvm-{quantize}"
        self.session = None

    def _program_dir(self, cache_dir: Path) -> Path:
        return Path(cache_dir) / self.name

    def prepare(self, checkpoint_dir: Path, cache_dir: Path) -> dict:
        from tensorvm.pycompiler.import_hf import import_hf
        from tensorvm.pycompiler.quantize import QUANTIZATIONS

        if self.quantize != "float32" and self.quantize not in QUANTIZATIONS:
            raise EngineUnavailable(f"tensorvm --quantize {self.quantize} not available in this build "
                                    f"(it has {', '.join(QUANTIZATIONS)})")
        out = self._program_dir(cache_dir)
        t0 = time.perf_counter()
        import_hf(checkpoint_dir, out, quantize=None if self.quantize == "float32" else self.quantize)
        return {"import_seconds": time.perf_counter() - t0, "program": str(out)}

    def imports(self) -> None:
        from tensorvm import _C  # noqa: F401

    def load(self, checkpoint_dir: Path, cache_dir: Path, threads: int) -> float:
        from tensorvm import _C

        t0 = time.perf_counter()
        self.program = _C.Program.load(str(self._program_dir(cache_dir)))
        self.session = _C.Session(self.program, threads)
        self.params = set(self.program.function_info("generate")["params"])
        return time.perf_counter() - t0

    def encode(self, ids, mask):
        self.session.run("encode", [ids, mask])

    def generate(self, ids, mask, num_beams, max_new_tokens, min_new_tokens=None):
        inputs = {"input_ids": ids, "attention_mask": mask, "max_new_tokens": int(max_new_tokens)}
        for name, value, default in (("num_beams", num_beams, 1), ("min_new_tokens", min_new_tokens, None)):
            if name in self.params:
                inputs[name] = None if value is None else int(value)
            elif value != default:
                raise EngineUnavailable(f"this tensorvm program's generate has no {name} option yet")
        return self.session.run_named("generate", inputs)[0]

    def close(self) -> None:
        self.session = None
