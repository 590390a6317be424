"""The steady-state decode loop allocates no heap memory per instruction: a C++ tool
that counts every operator new runs decode steps of an imported Marian program."""
import os
import subprocess
from pathlib import Path

import pytest

from marian_fixtures import imported

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("TENSORVM_BUILD_DIR", ROOT / "build" / "release"))


def _tool():
    tool = BUILD / "tensorvm-count-allocations"
    if tool.is_file():
        return tool
    if os.environ.get("CI"):
        pytest.fail(f"{tool} is missing (set TENSORVM_BUILD_DIR); .ci/setup builds it in build/release")
    pytest.skip(f"{tool} is missing; set TENSORVM_BUILD_DIR to a build directory")


@pytest.mark.parametrize("arena_bytes", [0, 64 << 20], ids=["pool", "arena"])
@pytest.mark.parametrize("threads", [1, 2])
def test_decode_steps_allocate_nothing_per_instruction(tmp_path, threads, arena_bytes):
    _, prog = imported("tiny-marian", tmp_path)
    steps = min(40, prog.meta["max_position_embeddings"])
    out = subprocess.run([str(_tool()), str(prog.path), str(steps), str(threads), str(arena_bytes)], check=True,
                         capture_output=True, text=True).stdout.split("\n")
    rows = [line.split() for line in out if line.startswith("step ")]
    assert len(rows) == steps
    allocations = [int(r[3]) for r in rows]
    instructions = [int(r[5]) for r in rows]
    assert len(set(instructions)) == 1 and instructions[0] > 100
    # After the first steps (pool warm-up; the arena's spare buffer handles), a step's only allocation is the result
    # vector that run() hands back to the caller.
    assert allocations[2:] == [1] * (steps - 2), allocations
