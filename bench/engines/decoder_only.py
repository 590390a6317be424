"""The engines of bench/decoder_only_bench.py: one prompt continued greedily by a
decoder-only LM (GPT-2, Qwen2, Llama), exactly `new_tokens` tokens.

Every engine implements
    prepare(checkpoint_dir, cache_dir) -> notes   one-off conversion, its own process, untimed
    imports()                                      the runtime's modules (RSS is read after them)
    load(checkpoint_dir, cache_dir, threads)
    generate(ids, new_tokens) -> np.int64 [new_tokens]
for a batch of one prompt `ids` ([L] int64, no padding). The amount of work is fixed:
EOS is banned until `new_tokens` tokens exist (transformers' min_new_tokens), so
every engine runs the same number of decode steps whatever the random weights say.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from .base import EngineUnavailable


class DecoderEngine:
    name = "?"
    precision = "float32"

    def prepare(self, checkpoint_dir: Path, cache_dir: Path) -> dict:
        return {}

    def imports(self) -> None:
        pass

    def load(self, checkpoint_dir: Path, cache_dir: Path, threads: int) -> None:
        raise NotImplementedError

    def generate(self, ids: np.ndarray, new_tokens: int) -> np.ndarray:
        raise NotImplementedError

    def info(self) -> dict:
        return {}

    def files(self, checkpoint_dir: Path, cache_dir: Path) -> list[Path]:
        """What the engine loads from disk (its size is the row's file size)."""
        return sorted(Path(checkpoint_dir).glob("*.safetensors"))

    def step_bytes(self, checkpoint_dir: Path, cache_dir: Path) -> tuple[int, bool]:
        """Weight bytes one batch-1 decode step reads, and whether the figure is exact (from
        the tensors' names) rather than the engine's file size scaled by the checkpoint's
        read-per-step fraction."""
        from ..decoder_only_models import bytes_per_step, weight_bytes

        size = files_bytes(self.files(checkpoint_dir, cache_dir))
        if size == weight_bytes(checkpoint_dir):
            return bytes_per_step(checkpoint_dir), True
        return int(size * bytes_per_step(checkpoint_dir) / weight_bytes(checkpoint_dir)), False


def files_bytes(paths: list[Path]) -> int:
    """Bytes of files and of every file under directories."""
    total = 0
    for p in map(Path, paths):
        total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size
    return total


def _tensorvm_build() -> str:
    """What an imported program depends on: the importer's sources (git tree of
    pycompiler/, "+edited" when the work tree differs) and the runtime's build, so a
    cached import is redone when either changes."""
    import subprocess

    from tensorvm import _C

    root = Path(__file__).resolve().parents[2]
    git = ["git", "-C", str(root)]
    tree = subprocess.run([*git, "rev-parse", "HEAD:pycompiler"], capture_output=True, text=True).stdout.strip()
    edited = subprocess.run([*git, "diff", "--quiet", "HEAD", "--", "pycompiler"]).returncode != 0
    so = Path(_C.__file__).resolve()
    return f"{tree}{'+edited' if edited else ''} {so}:{so.stat().st_mtime_ns}"


class TensorVM(DecoderEngine):
    """`Program.generate`: prefill, search and stopping in one C++ `generate` call."""

    def __init__(self, quantize: str = "float32"):
        self.quantize = quantize
        self.precision = "float32" if quantize == "float32" else quantize
        self.name = "tensorvm" if quantize == "float32" else f"tensorvm-{quantize}"

    def _program_dir(self, cache_dir: Path) -> Path:
        return Path(cache_dir) / f"{self.name}.tvm"

    def files(self, checkpoint_dir, cache_dir):
        return [self._program_dir(cache_dir)]

    def step_bytes(self, checkpoint_dir, cache_dir):
        from ..decoder_only_models import bytes_per_step

        if list(self._program_dir(cache_dir).glob("*.safetensors")):  # the weights keep the checkpoint's names
            return bytes_per_step(self._program_dir(cache_dir)), True
        return super().step_bytes(checkpoint_dir, cache_dir)

    def prepare(self, checkpoint_dir, cache_dir):
        from tensorvm.pycompiler.import_hf import import_hf
        from tensorvm.pycompiler.quantize import QUANTIZATIONS

        if self.quantize != "float32" and self.quantize not in QUANTIZATIONS:
            raise EngineUnavailable(f"tensorvm --quantize {self.quantize} not available in this build "
                                    f"(it has {', '.join(QUANTIZATIONS)})")
        out = self._program_dir(cache_dir)
        stamp = Path(cache_dir) / f"{self.name}.stamp"
        want = f"{Path(checkpoint_dir).resolve()} {_tensorvm_build()}\n"
        if out.is_dir() and stamp.exists() and stamp.read_text() == want:
            return {"import_s": 0.0, "cached": True}
        t0 = time.perf_counter()
        import_hf(checkpoint_dir, out, quantize=None if self.quantize == "float32" else self.quantize)
        stamp.write_text(want)
        return {"import_s": round(time.perf_counter() - t0, 2), "cached": False}

    def imports(self):
        import tensorvm  # noqa: F401

    def load(self, checkpoint_dir, cache_dir, threads):
        import tensorvm

        self.prog = tensorvm.load(self._program_dir(cache_dir), num_threads=threads)
        self.prog._vm()  # maps the weights now, not in the first timed call

    def generate(self, ids, new_tokens):
        ids = ids[None, :]
        out = self.prog.generate(ids, np.ones_like(ids), max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                 do_sample=False, num_beams=1)
        return np.asarray(out)[0, ids.shape[1]:].astype(np.int64)


class Transformers(DecoderEngine):
    """`AutoModelForCausalLM.generate()`, torch eager, default (sdpa) attention, inference_mode."""

    name = "transformers"

    def imports(self):
        import torch  # noqa: F401
        import transformers

        transformers.logging.set_verbosity_error()

    def load(self, checkpoint_dir, cache_dir, threads):
        import torch
        from transformers import AutoModelForCausalLM

        self.torch = torch
        torch.set_num_threads(threads)
        self.model = AutoModelForCausalLM.from_pretrained(str(checkpoint_dir), dtype=torch.float32).eval()
        self.pad = self.model.generation_config.pad_token_id
        if self.pad is None:
            self.pad = self.model.generation_config.eos_token_id

    def generate(self, ids, new_tokens):
        torch = self.torch
        x = torch.from_numpy(ids[None, :])
        with torch.inference_mode():
            out = self.model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=new_tokens,
                                      min_new_tokens=new_tokens, do_sample=False, num_beams=1,
                                      pad_token_id=self.pad)
        return out[0, ids.shape[0]:].numpy().astype(np.int64)

    def info(self):
        import torch
        import transformers

        return {"torch": torch.__version__, "transformers": transformers.__version__,
                "torch_threads": torch.get_num_threads(),
                "attn_implementation": getattr(self.model.config, "_attn_implementation", None)}


def _token_names(vocab_size: int) -> list[str]:
    """CTranslate2 works on token strings: every id is named by its decimal string."""
    return [str(i) for i in range(vocab_size)]


class _IdVocabTokenizer:
    """The members of a tokenizer that CTranslate2's GPT-2 / Llama / Qwen2 loaders read:
    the vocabulary and the special tokens' names (our checkpoints have no tokenizer files)."""

    pad_token = None

    def __init__(self, names: list[str], bos: int | None, eos: int):
        self._names = names
        self.bos_token = names[bos] if bos is not None else None
        self.eos_token = names[eos]
        self.unk_token = names[eos]  # as GPT-2's tokenizer; CTranslate2's config needs a string
        self.special_tokens_map = {}

    def get_vocab(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self._names)}


def _first(x):
    return x[0] if isinstance(x, list) else x


def special_ids(checkpoint_dir: Path) -> tuple[int, int | None, int]:
    cfg = json.loads((Path(checkpoint_dir) / "config.json").read_text())
    gen_path = Path(checkpoint_dir) / "generation_config.json"
    gen = json.loads(gen_path.read_text()) if gen_path.exists() else {}
    eos = _first(gen.get("eos_token_id", cfg.get("eos_token_id")))
    bos = _first(gen.get("bos_token_id", cfg.get("bos_token_id")))
    return cfg["vocab_size"], bos, eos


class CTranslate2(DecoderEngine):
    """`ctranslate2.Generator.generate_batch`, greedy (sampling_topk=1), the prompt
    forwarded in one pass (include_prompt_in_result=False), EOS banned until
    `new_tokens` (min_length). Converted by the package's own TransformersConverter; the
    only change is a stub tokenizer naming every id by its decimal string."""

    def __init__(self, quantization: str = "float32"):
        self.quantization = quantization
        self.precision = quantization
        self.name = f"ctranslate2-{quantization}"

    def _model_dir(self, cache_dir: Path) -> Path:
        return Path(cache_dir) / f"ct2-{self.quantization}"

    def files(self, checkpoint_dir, cache_dir):
        return [self._model_dir(cache_dir)]

    def prepare(self, checkpoint_dir, cache_dir):
        try:
            import ctranslate2
            from ctranslate2.converters import TransformersConverter
        except ImportError as e:
            raise EngineUnavailable(f"ctranslate2 not installed: {e}") from e

        stub = self.stub_tokenizer

        class IdVocabConverter(TransformersConverter):
            def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
                return stub(Path(model_name_or_path))

        out = self._model_dir(cache_dir)
        stamp = out / "BENCH_SOURCE"
        want = f"{Path(checkpoint_dir).resolve()} ctranslate2={ctranslate2.__version__}\n"
        if stamp.exists() and stamp.read_text() == want:
            return {"convert_s": 0.0, "cached": True}
        t0 = time.perf_counter()
        IdVocabConverter(str(checkpoint_dir), low_cpu_mem_usage=True).convert(
            str(out), quantization=self.quantization, force=True)
        stamp.write_text(want)
        return {"convert_s": round(time.perf_counter() - t0, 2), "cached": False}

    def stub_tokenizer(self, checkpoint_dir: Path):
        """What the converter gets instead of the checkpoint's (absent) tokenizer files."""
        vocab, bos, eos = special_ids(checkpoint_dir)
        return _IdVocabTokenizer(_token_names(vocab), bos, eos)

    def imports(self):
        try:
            import ctranslate2  # noqa: F401
        except ImportError as e:
            raise EngineUnavailable(f"ctranslate2 not installed: {e}") from e

    def load(self, checkpoint_dir, cache_dir, threads):
        import ctranslate2

        self.ct2 = ctranslate2
        self.threads = threads
        vocab, _, self.eos = special_ids(checkpoint_dir)
        self.names = _token_names(vocab)
        self.generator = ctranslate2.Generator(str(self._model_dir(cache_dir)), device="cpu",
                                               compute_type=self.quantization, inter_threads=1,
                                               intra_threads=threads)

    def generate(self, ids, new_tokens):
        res = self.generator.generate_batch([[self.names[t] for t in ids.tolist()]], max_length=new_tokens,
                                            min_length=new_tokens, sampling_topk=1, beam_size=1,
                                            include_prompt_in_result=False)
        return np.asarray(res[0].sequences_ids[0], dtype=np.int64)

    def info(self):
        return {"ctranslate2": self.ct2.__version__, "compute_type": self.generator.compute_type,
                "intra_threads": self.threads, "inter_threads": 1}


ENGINES = {
    "tensorvm": lambda: TensorVM("float32"),
    "tensorvm-int8": lambda: TensorVM("int8"),
    "tensorvm-w8a8": lambda: TensorVM("w8a8"),
    # issue 29's schemes: "unavailable" rows until the build's importer knows them
    **{f"tensorvm-{q}": (lambda q=q: TensorVM(q)) for q in ("int4", "w4a8", "f16", "bf16")},
    "transformers": Transformers,
    "ctranslate2-float32": lambda: CTranslate2("float32"),
    "ctranslate2-int8": lambda: CTranslate2("int8"),
}
REFERENCE = "transformers"


def all_engines() -> dict:
    """ENGINES and llama.cpp's (bench/engines/llama_cpp.py, which builds on this module)."""
    from .llama_cpp import ENGINES as LLAMA_CPP

    return {**ENGINES, **LLAMA_CPP}


def make(name: str) -> DecoderEngine:
    engines = all_engines()
    if name not in engines:
        raise KeyError(f"unknown engine {name!r}; known: {', '.join(engines)}")
    return engines[name]()
