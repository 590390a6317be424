"""transformers eager: ``MarianMTModel.generate()`` (the parity reference)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .base import Engine


class TransformersEngine(Engine):
    name = "transformers"
    precision = "float32"

    def imports(self) -> None:
        import torch  # noqa: F401
        import transformers
        from transformers import MarianMTModel  # noqa: F401

        transformers.logging.set_verbosity_error()  # "both max_new_tokens and max_length" notes

    def load(self, checkpoint_dir: Path, cache_dir: Path, threads: int) -> float:
        import torch
        from transformers import MarianMTModel

        self.imports()
        self.torch = torch
        torch.set_num_threads(threads)
        t0 = time.perf_counter()
        self.model = MarianMTModel.from_pretrained(str(checkpoint_dir)).eval()
        dt = time.perf_counter() - t0
        self.threads = threads
        return dt

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> None:
        torch = self.torch
        with torch.inference_mode():
            self.model.get_encoder()(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))

    def generate(self, ids, mask, num_beams, max_new_tokens, min_new_tokens=None):
        torch = self.torch
        kwargs = {}
        if min_new_tokens:
            kwargs["min_new_tokens"] = min_new_tokens
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=torch.from_numpy(ids),
                attention_mask=torch.from_numpy(mask),
                num_beams=num_beams,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                **kwargs,
            )
        return out.numpy().astype(np.int64)

    def info(self) -> dict:
        import torch
        import transformers

        return {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "torch_threads": torch.get_num_threads(),
            "attn_implementation": getattr(self.model.config, "_attn_implementation", None),
        }
