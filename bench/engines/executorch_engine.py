"""ExecuTorch (XNNPACK backend), float32 and 8da8w: batch 1, greedy, host-side loop.

The worker and the export run in ExecuTorch's own venv (executorch_venv.py;
``interpreter`` tells the harness which Python). The programs come from
executorch_export.py: ``encode``, ``cross_kv`` (once per call) and ``decode``,
one decoder step on a static self-attention cache of ``max_len`` positions
passed in and out. The loop is on the host, as optimum-executorch runs seq2seq
models (encoder once, then one ``decode`` call per token, argmax in Python);
it applies Marian's default processors (the ONNX Runtime engine's, which this
class extends), so its tokens can be compared with transformers' exactly.

What it cannot do: batch > 1 (the programs are exported for batch 1, so there
is no padding mask either), beam search (no cache reorder in the programs, and
no batch of beams), the loop inside the program (one step per program, as
optimum-executorch exports seq2seq models; not attempted), more than
``max_len - 1`` new tokens or a source longer than ``max_src``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from .base import EngineUnavailable, MarianIds, generation_defaults
from .onnxruntime_engine import OnnxRuntimeEngine


class ExecuTorchEngine(OnnxRuntimeEngine):
    def __init__(self, quant: str | None = None):
        self.quant = quant
        self.precision = "int8" if quant else "float32"
        self.name = f"executorch-{quant or 'float32'}"

    def interpreter(self, cache_root: Path) -> str:
        from . import executorch_venv

        return str(executorch_venv.ensure(cache_root))

    def supports(self, batch: int, num_beams: int) -> str | None:
        if batch != 1:
            return "batch 1 only (exported for batch 1)"
        if num_beams != 1:
            return "greedy only (no beam search)"
        return None

    def _dir(self, cache_dir: Path) -> Path:
        return cache_dir / f"executorch-{self.quant or 'float32'}"

    def prepare(self, checkpoint_dir: Path, cache_dir: Path) -> dict:
        try:
            import executorch.version
            import torch

            from . import executorch_export
        except ImportError as e:
            raise EngineUnavailable(f"executorch not importable (run in its venv): {e}") from e
        out = self._dir(cache_dir)
        stamp = out / "BENCH_SOURCE"
        want = (f"{checkpoint_dir.resolve()} export={executorch_export.EXPORT_VERSION} "
                f"executorch={executorch.version.__version__} torch={torch.__version__} quant={self.quant}\n")
        if stamp.exists() and stamp.read_text() == want:
            return {"export_s": 0.0, "cached": True}
        info = executorch_export.export(checkpoint_dir, out, self.quant)
        stamp.write_text(want)
        return {"cached": False, **info}

    def imports(self) -> None:
        try:
            import executorch.extension.pybindings.portable_lib  # noqa: F401
            import torch  # noqa: F401
            from executorch.runtime import Runtime  # noqa: F401
        except ImportError as e:
            raise EngineUnavailable(f"executorch not importable (run in its venv): {e}") from e

    def load(self, checkpoint_dir: Path, cache_dir: Path, threads: int) -> float:
        import executorch.extension.pybindings.portable_lib as portable
        import executorch.version
        import torch
        from executorch.runtime import Runtime

        self.torch = torch
        self.version = executorch.version.__version__
        self.ids = MarianIds.from_checkpoint(checkpoint_dir)
        self.gen = generation_defaults(checkpoint_dir)
        d = self._dir(cache_dir)
        self.export_info = json.loads((d / "export_info.json").read_text())
        self.L, self.H, self.Dh = (self.export_info[k] for k in ("layers", "heads", "head_dim"))
        self.T, self.max_src = self.export_info["max_len"], self.export_info["max_src"]
        self.threads = threads
        t0 = time.perf_counter()
        portable._unsafe_reset_threadpool(threads)  # XNNPACK's pool; the default is one per core
        rt = Runtime.get()
        self.m = {n: rt.load_program(str(d / f"{n}.pte")).load_method(n) for n in ("encode", "cross_kv", "decode")}
        return time.perf_counter() - t0

    # -- model pieces (the ONNX Runtime engine's greedy loop calls these) ------

    def _check(self, ids: np.ndarray, mask: np.ndarray) -> None:
        if ids.shape[0] != 1 or not mask.all():
            raise EngineUnavailable(f"{self.name}: batch 1 without padding only, got ids of shape {ids.shape}")
        if not 2 <= ids.shape[1] <= self.max_src:
            raise EngineUnavailable(f"{self.name}: source length {ids.shape[1]} outside 2..{self.max_src}")

    def encode(self, ids: np.ndarray, mask: np.ndarray):
        self._check(ids, mask)
        return self.m["encode"].execute([self.torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64))])[0]

    def _cross_kv(self, enc):
        # the outputs live in cross_kv's planned memory until its next call (the next generate)
        return tuple(self.m["cross_kv"].execute([enc]))

    def _empty_cache(self, n: int):
        self._pos = 0
        z = self.torch.zeros(self.L, 1, self.H, self.T, self.Dh)
        return z, z.clone()

    def _step(self, tokens, enc_mask, pk, pv, ck, cv):
        # decode's inputs are copied into its planned memory, so its previous outputs may be passed back
        tok = self.torch.from_numpy(np.ascontiguousarray(tokens.reshape(1, 1), dtype=np.int64))
        logits, pk, pv = self.m["decode"].execute([tok, self.torch.tensor([self._pos]), pk, pv, ck, cv])
        self._pos += 1
        return logits.numpy(), pk, pv

    def generate(self, ids, mask, num_beams, max_new_tokens, min_new_tokens=None):
        why = self.supports(ids.shape[0], num_beams)
        if why:
            raise EngineUnavailable(f"{self.name}: {why}")
        if max_new_tokens >= self.T:
            raise EngineUnavailable(f"{self.name}: {max_new_tokens} new tokens > the static cache's {self.T - 1}")
        ck, cv = self._cross_kv(self.encode(ids, mask))
        return self._greedy(mask, ck, cv, max_new_tokens, min_new_tokens)

    def info(self) -> dict:
        return {
            "executorch": self.version,
            "backend": "XnnpackBackend",
            "quantization": self.quant or "none",
            "threads": self.threads,
            "static_cache_positions": self.T,
            "max_src": self.max_src,
            "export": self.export_info,
        }
