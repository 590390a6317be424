"""build_info.json of the committed trained fixtures of speculative decoding (the same
fields as tests/fixtures/make_checkpoints.py's): the fingerprint of the spec they were
trained from, the SHA-256 of every file, the CPU, the versions, and what the training
script reports (losses, steps, seconds). check_build_info is what tests call: the files
are committed and read-only, a test never retrains them."""
from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "fixtures"))
from make_checkpoints import _cpu_name as cpu_name  # noqa: E402

BUILD_INFO = "build_info.json"


def spec_fingerprint(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_build_info(out: Path, spec: dict, info: dict) -> dict:
    import torch
    import transformers

    files = {f.name: _sha256(f) for f in sorted(Path(out).iterdir()) if f.is_file() and f.name != BUILD_INFO}
    full = {**info, "spec": spec, "spec_fingerprint": spec_fingerprint(spec), "files": files,
            "built_on": {"cpu": cpu_name(), "torch_cpu_capability": torch.backends.cpu.get_cpu_capability()},
            "python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__}
    (Path(out) / BUILD_INFO).write_text(json.dumps(full, indent=1, ensure_ascii=False) + "\n")
    return full


def check_build_info(path: Path, spec: dict, regenerate: str) -> dict:
    """build_info.json of the committed fixture at `path`, after checking it was trained from
    `spec` and that no file changed; ValueError naming the file and the fix otherwise."""
    path = Path(path)
    try:
        info = json.loads((path / BUILD_INFO).read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"check_build_info: {path} holds no readable {BUILD_INFO} ({e}); train it with "
                         f"`{regenerate}` and commit it") from None
    if info.get("spec_fingerprint") != spec_fingerprint(spec):
        raise ValueError(f"check_build_info: {path} was trained from another spec; retrain it with `{regenerate}`")
    for name, digest in info["files"].items():
        if not (path / name).is_file() or _sha256(path / name) != digest:
            raise ValueError(f"check_build_info: {path / name} is missing or differs from its SHA-256 in {BUILD_INFO} "
                             f"(committed fixtures are read-only); restore it with `git checkout -- {path}`")
    return info


def optimizer_step(opt, model, loss, clip: float = 1.0) -> None:
    """One AdamW step of the training scripts, gradients clipped to `clip`."""
    import torch

    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()


def set_lr(opt, peak: float, step: int, warmup: int, spent: float) -> None:
    """The copy scripts' schedule: linear warm-up over `warmup` steps, then linear decay with
    the `spent` fraction of the CPU budget, to no less than 5% of `peak`."""
    lr = peak * min(1.0, (step + 1) / warmup) * max(0.05, 1 - spent)
    for group in opt.param_groups:
        group["lr"] = lr
