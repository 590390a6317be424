"""The ExecuTorch virtual environment of the benchmark: made on first use, reused after.

executorch 1.5.1 from PyPI declares no torch requirement but pulls in about
twenty packages the engine never imports (coremltools, scikit-learn, pandas,
hydra...). The venv is made with ``--system-site-packages`` so that it runs the
installed torch 2.13.0, and gets only ``PACKAGES`` with ``--no-deps``: what
``executorch.exir``, the XNNPACK partitioner / quantizer and
``executorch.runtime`` import. After installing, the venv's torch must be the
system's (nothing may have shadowed it) and the XNNPACK backend must be
registered; otherwise the venv is not kept and the engine is unavailable.

Location: ``<bench cache root>/executorch-venv-<version>`` (the cache root is
compare.py's ``--cache`` / $TENSORVM_BENCH_CACHE / bench/.cache).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .base import EngineUnavailable

EXECUTORCH_VERSION = "1.5.1"
PACKAGES = [
    f"executorch=={EXECUTORCH_VERSION}",
    "torchao==0.18.0",  # PT2E quantization (executorch requires >=0.18,<0.19)
    "ruamel.yaml==0.19.1",  # executorch.exir's edge dialect
    "tabulate==0.10.0",  # executorch.exir's delegation summary
]
READY = "BENCH_READY.json"

_CHECK = r"""
import json, torch
from executorch.runtime import Runtime
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner  # noqa: F401
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import XNNPACKQuantizer  # noqa: F401
import executorch.version as v
print(json.dumps({"torch": torch.__version__, "torch_file": torch.__file__, "executorch": v.__version__,
                  "xnnpack": Runtime.get().backend_registry.is_available("XnnpackBackend")}))
"""


def venv_dir(cache_root: Path) -> Path:
    return Path(cache_root) / f"executorch-venv-{EXECUTORCH_VERSION}"


def _python(d: Path) -> Path:
    return d / "bin" / "python"


def _check(python: Path) -> dict:
    r = subprocess.run([str(python), "-c", _CHECK], capture_output=True, text=True)
    if r.returncode != 0:
        raise EngineUnavailable(f"executorch venv {python.parent.parent} does not import: {r.stderr.strip()[-600:]}")
    info = json.loads(r.stdout.strip().splitlines()[-1])
    import torch  # the system's

    if info["torch"] != torch.__version__:
        raise EngineUnavailable(
            f"executorch venv runs torch {info['torch']} ({info['torch_file']}), not the system's {torch.__version__}"
        )
    if not info["xnnpack"]:
        raise EngineUnavailable("executorch venv: the XNNPACK backend is not registered in executorch.runtime")
    return info


def ensure(cache_root: Path, log=sys.stderr) -> Path:
    """The venv's python, making the venv first if it is missing. Raises EngineUnavailable."""
    d = venv_dir(cache_root)
    if (d / READY).exists():
        return _python(d)
    tmp = d.with_name(d.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    print(f"executorch: making {d} (pip install --no-deps {' '.join(PACKAGES)}) ...", file=log, flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(tmp)], check=True,
                       capture_output=True, text=True)
        r = subprocess.run([str(_python(tmp)), "-m", "pip", "install", "--quiet", "--no-deps", *PACKAGES],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise EngineUnavailable(f"pip install {' '.join(PACKAGES)} failed: {r.stderr.strip()[-600:]}")
        info = _check(_python(tmp))
    except subprocess.CalledProcessError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise EngineUnavailable(f"cannot make the executorch venv: {e.stderr or e}") from e
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    (tmp / READY).write_text(json.dumps({"packages": PACKAGES, **info}, indent=2) + "\n")
    shutil.rmtree(d, ignore_errors=True)
    os.rename(tmp, d)  # python -m pip / -c work from the moved venv (pyvenv.cfg names the base python only)
    return _python(d)


if __name__ == "__main__":
    import argparse

    from bench import checkpoint  # run as: python3 -m bench.engines.executorch_venv

    ap = argparse.ArgumentParser(description="make (or find) the benchmark's ExecuTorch venv")
    ap.add_argument("--cache", help="bench cache root (default $TENSORVM_BENCH_CACHE or bench/.cache)")
    a = ap.parse_args()

    print(ensure(checkpoint.cache_root(a.cache)))
