"""Which checkpoint the benchmark runs on, and the per-checkpoint cache.

``resolve(spec)``: a directory, or a name known to tests/fixtures/make_checkpoints.py
(``opus-mt-en-fr-random``, ``tiny-marian``), from the fixture's ``ensure_checkpoint``:
trained ones are committed in tests/fixtures/data, random ones are built on first use
(cache: $TENSORVM_CHECKPOINT_CACHE or tests/fixtures/.cache).

``prepare(dir, cache_root)``: the directory all engines load. Marian checkpoints
converted from the original Marian models have an all-zero embedding row for
the pad token (= the decoder start token): the conversion appends it as zeros.
CTranslate2 relies on it (its Marian loader drops the pad row and starts the
decoder from a zero embedding). The seeded random fixtures fill that row with
random numbers, which no real opus-mt checkpoint has, and which would make
CTranslate2 compute something else than transformers. So when the row is not
zero, the benchmark writes a copy of the checkpoint with that one row zeroed
(in every token-embedding matrix; nothing else changes) and *every* engine,
transformers included, runs on the copy. ``--keep-pad-row`` turns this off.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "make_checkpoints.py"
BENCH_CACHE_ENV = "TENSORVM_BENCH_CACHE"
DEFAULT_BENCH_CACHE = REPO_ROOT / "bench" / ".cache"

EMBEDDING_KEYS = ("model.shared.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight")


def _fixtures_module():
    import sys

    name = "tensorvm_make_checkpoints"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, FIXTURES)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up while the file runs
    spec.loader.exec_module(mod)
    return mod


def resolve(spec: str) -> Path:
    p = Path(spec)
    if p.is_dir():
        return p.resolve()
    if not FIXTURES.exists():
        raise FileNotFoundError(f"{spec!r} is not a directory and {FIXTURES} does not exist")
    fx = _fixtures_module()
    if spec not in fx.SPECS:
        raise KeyError(f"{spec!r} is neither a directory nor a fixture name ({', '.join(fx.SPECS)})")
    return Path(fx.ensure_checkpoint(spec, verbose=True)).resolve()


def identity(checkpoint_dir: Path) -> str:
    """A short key for the checkpoint: its FINGERPRINT file, else config + weight file stats."""
    fp = checkpoint_dir / "FINGERPRINT"
    h = hashlib.sha256()
    if fp.exists():
        h.update(fp.read_bytes())
    else:
        for f in sorted(checkpoint_dir.iterdir()):
            if f.is_file():
                st = f.stat()
                h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
                if f.suffix == ".json":
                    h.update(f.read_bytes())
    return h.hexdigest()[:16]


def cache_root(override: str | None = None) -> Path:
    return Path(override or os.environ.get(BENCH_CACHE_ENV) or DEFAULT_BENCH_CACHE)


def tool_home(env: str, name: str) -> Path:
    """Where an external engine's build lives (llama.cpp, whisper.cpp): $env, else the bench
    cache's `name` folder."""
    return Path(os.environ[env]) if os.environ.get(env) else cache_root() / name


def _weight_files(checkpoint_dir: Path) -> list[Path]:
    files = sorted(checkpoint_dir.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no *.safetensors in {checkpoint_dir}")
    return files


def pad_rows_nonzero(checkpoint_dir: Path) -> dict[str, float]:
    """{embedding key: sum |row[pad]|} for every embedding whose pad row is not zero."""
    from safetensors import safe_open

    pad = json.loads((checkpoint_dir / "config.json").read_text())["pad_token_id"]
    out = {}
    for f in _weight_files(checkpoint_dir):
        with safe_open(str(f), "numpy") as st:
            for k in st.keys():
                if k in EMBEDDING_KEYS:
                    s = float(abs(st.get_slice(k)[pad : pad + 1]).sum())
                    if s != 0.0:
                        out[k] = s
    return out


def prepare(checkpoint_dir: Path, cache: Path, keep_pad_row: bool = False) -> tuple[Path, Path, dict]:
    """Return (directory every engine loads, cache dir for this checkpoint, notes)."""
    checkpoint_dir = checkpoint_dir.resolve()
    key = identity(checkpoint_dir)
    ck_cache = cache / f"{checkpoint_dir.name}-{key}"
    ck_cache.mkdir(parents=True, exist_ok=True)
    notes: dict = {"source_checkpoint": str(checkpoint_dir), "identity": key}
    if keep_pad_row:
        notes["pad_row"] = "kept as in the checkpoint (--keep-pad-row)"
        ck_cache = cache / f"{checkpoint_dir.name}-{key}-keep-pad-row"
        ck_cache.mkdir(parents=True, exist_ok=True)
        return checkpoint_dir, ck_cache, notes
    nonzero = pad_rows_nonzero(checkpoint_dir)
    if not nonzero:
        notes["pad_row"] = "already zero (as in real opus-mt checkpoints); checkpoint used as is"
        return checkpoint_dir, ck_cache, notes
    derived = ck_cache / "checkpoint"
    stamp = derived / "BENCH_DERIVED.json"
    if not stamp.exists():
        from safetensors import safe_open
        from safetensors.numpy import save_file

        tmp = ck_cache / ".checkpoint.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        pad = json.loads((checkpoint_dir / "config.json").read_text())["pad_token_id"]
        for f in checkpoint_dir.iterdir():
            if f.is_file() and f.suffix != ".safetensors":
                shutil.copy2(f, tmp / f.name)
        for f in _weight_files(checkpoint_dir):
            with safe_open(str(f), "numpy") as st:
                meta = st.metadata()
                tensors = {k: st.get_tensor(k) for k in st.keys()}
            for k in nonzero:
                if k in tensors:
                    tensors[k] = tensors[k].copy()
                    tensors[k][pad] = 0
            save_file(tensors, str(tmp / f.name), metadata=meta)
        (tmp / "BENCH_DERIVED.json").write_text(
            json.dumps(
                {
                    "from": str(checkpoint_dir),
                    "identity": key,
                    "change": f"token-embedding row {pad} (pad = decoder start) set to zero in {sorted(nonzero)}",
                },
                indent=2,
            )
            + "\n"
        )
        shutil.rmtree(derived, ignore_errors=True)
        os.rename(tmp, derived)
    notes["pad_row"] = (
        f"zeroed in a benchmark copy ({derived}); the fixture's pad row was random "
        f"(sum|row| {', '.join(f'{k}={v:.3g}' for k, v in nonzero.items())})"
    )
    return derived, ck_cache, notes
