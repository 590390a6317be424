"""tensorvm through its C++ runtime: NOT WIRED YET.

This module is the slot the lead fills in. Until then ``load`` raises
``EngineUnavailable`` and compare.py prints the row as unavailable; no numbers
are ever made up for it.

What the finished engine must do (see bench/README.md, "Plugging tensorvm in"):

* ``prepare(checkpoint_dir, cache_dir)``: import the checkpoint with pycompiler
  (Marian importer) into ``cache_dir / "tensorvm"`` (program text + weights);
  float32, and int8 when ``quantize="int8"``. Untimed, may import torch.
* ``load(...)``: ``vm::Program::load`` + a ``vm::Session`` with the thread count
  set (through the pybind11 binding or a C++ helper), returning the seconds it
  took. The timed worker must not import torch.
* ``encode(ids, mask)``: run the program's ``encode`` entry function only.
* ``generate(ids, mask, num_beams, max_new_tokens, min_new_tokens)``: ONE call
  of the program's ``generate`` entry (``vm::run(session, "generate", ...)``):
  the whole loop (cache, search, processors, stopping) runs in C++; the Python
  side only converts inputs and the result. Same output format as the other
  engines (``base.py``: decoder start first, pad after EOS, transformers'
  semantics for ``min_new_tokens`` and Marian's forced EOS).
"""

from __future__ import annotations

from pathlib import Path

from .base import Engine, EngineUnavailable


class TensorVMEngine(Engine):
    def __init__(self, quantize: str = "float32"):
        self.quantize = quantize
        self.precision = "int8" if quantize == "int8" else "float32"
        self.name = "tensorvm" if quantize == "float32" else f"tensorvm-{quantize}"

    def _unavailable(self):
        raise EngineUnavailable(
            "tensorvm engine is not wired into the benchmark yet "
            "(bench/engines/tensorvm_engine.py is a placeholder; see bench/README.md)"
        )

    def prepare(self, checkpoint_dir: Path, cache_dir: Path) -> dict:
        self._unavailable()

    def imports(self) -> None:
        self._unavailable()

    def load(self, checkpoint_dir: Path, cache_dir: Path, threads: int) -> float:
        self._unavailable()

    def encode(self, ids, mask):
        self._unavailable()

    def generate(self, ids, mask, num_beams, max_new_tokens, min_new_tokens=None):
        self._unavailable()
