"""The profiler from Python and the CLI: its tables agree with what ran, its trace
loads as Chrome trace JSON and nests. Times are never asserted."""
import json
import re

import numpy as np
import pytest

import tensorvm
from tensorvm import _C
from tensorvm.pycompiler.cli import main
from tensorvm.pycompiler.program_dir import write_program_dir

from pyc_helpers import LOOP_FUNCTIONS, requires_vm

pytestmark = requires_vm

TEXT = LOOP_FUNCTIONS + """
def half(x: Tensor) -> Tensor:
    mul_0 = mul(x, 0.5)
    return mul_0

def main(x: Tensor, n: int) -> Tensor:
    half_0 = half(x)
    w_0, w_1, w_2 = while_loop(more, step, 0, n, half_0)
    return w_2
"""


@pytest.fixture
def program(tmp_path, rng):
    w = rng.standard_normal((8, 8)).astype(np.float32)
    return write_program_dir(tmp_path / "loop.tvm", TEXT, {"w": w}, {})


def expected_counts(n):
    """(function, line) -> executions, read off the program for a trip count n."""
    counts = {("more", 3): n + 1, ("more", 4): n + 1,
              ("step", 7): n, ("step", 9): n, ("step", 10): n, ("step", 11): n,
              ("half", 14): 1, ("half", 15): 1,
              ("main", 18): 1, ("main", 19): 1, ("main", 20): 1}
    return {k: v for k, v in counts.items() if v}  # an instruction that never ran is not listed


def check_nesting(events):
    """Complete events on one thread must form a tree: each slice lies inside the
    one open around it or starts after it ends. Returns each event's parent."""
    xs = sorted((e for e in events if e["ph"] == "X"), key=lambda e: (e["ts"], -e["dur"]))
    open_, parent = [], {}
    for e in xs:
        start, end = e["ts"], e["ts"] + e["dur"]
        while open_ and start >= open_[-1]["ts"] + open_[-1]["dur"] and not (
                e["dur"] == 0 and start == open_[-1]["ts"] + open_[-1]["dur"] == open_[-1]["ts"]):
            open_.pop()
        if open_:
            top = open_[-1]
            assert end <= top["ts"] + top["dur"] + 1e-9, f"{e['name']} overlaps the end of {top['name']}"
            parent[id(e)] = top
        open_.append(e)
    return parent


@pytest.mark.parametrize("n", [0, 1, 4])
def test_counts_are_the_instructions_that_ran(program, rng, n):
    p = tensorvm.load(program)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    before = p.session.instructions_executed
    prof = p.profile("main", x, n=n)
    ran = p.session.instructions_executed - before
    got = {(i["function"], i["line"]): i["count"] for i in prof.instructions}
    assert got == expected_counts(n)
    assert sum(got.values()) == ran
    assert prof.calls["while_loop"]["count"] == 1 and prof.calls["half"]["count"] == 1
    if n:
        lin = prof.ops["linear"]
        assert lin["macs"] == lin["weight_macs"] == n * 3 * 8 * 8
        assert lin["weight_bytes"] == n * 8 * 8 * 4
        assert lin["bytes_in"] == n * (3 * 8 + 8 * 8) * 4 and lin["bytes_out"] == n * 3 * 8 * 4
    np.testing.assert_allclose(prof.result, p.run("main", x, n), rtol=1e-6)


def shares(table: str) -> list[float]:
    return [float(m) for m in re.findall(r" (\d+\.\d)% ", table)]


def test_tables_and_shares(program, rng):
    p = tensorvm.load(program)
    prof = p.profile("main", rng.standard_normal((3, 8)).astype(np.float32), 6, repeat=3)
    table = prof.op_table()
    rows = table.splitlines()[1:-1]
    assert rows[-1].startswith("(interpreter)")
    assert {r.split()[0] for r in rows} == {"lt", "add", "linear", "tanh", "mul", "return", "(interpreter)"}
    assert abs(sum(shares(table)) - 100) <= 0.05 * len(rows) + 0.1  # each share is rounded to 0.1
    assert "(3 runs)" in table.splitlines()[-1]
    counts = {r.split()[0]: int(r.split()[1]) for r in rows[:-1]}
    assert counts["lt"] == 3 * 7 and counts["linear"] == 3 * 6
    assert "GFLOP/s" in next(r for r in rows if r.startswith("linear"))
    ins = prof.instruction_table(top=3).splitlines()
    assert len(ins) == 1 + 3 + 1 and ins[-1] == "... 6 more instructions"  # 11 less the call and the loop
    assert re.search(r"^step:9 .* linear_0 = linear\(x, w\)$", "\n".join(prof.instruction_table(50).splitlines()), re.M)
    assert "while_loop" in prof.call_table()


@pytest.mark.parametrize("n", [0, 3])
def test_trace_nests_calls_loops_and_iterations(program, rng, tmp_path, n):
    p = tensorvm.load(program)
    prof = p.profile("main", rng.standard_normal((3, 8)).astype(np.float32), n)
    path = prof.trace(tmp_path / "t.json")
    doc = json.loads(path.read_text())
    assert not list(tmp_path.glob("t.json.tmp*"))
    events = doc["traceEvents"]
    xs = [e for e in events if e["ph"] == "X"]
    parent = check_nesting(events)
    by_cat = {}
    for e in xs:
        by_cat.setdefault(e["cat"], []).append(e)
    assert [e["name"] for e in by_cat["run"]] == ["main"]
    assert all(id(e) in parent for e in xs if e["cat"] != "run")
    loops = by_cat["loop"]
    assert len(loops) == 1 and loops[0]["args"]["line"] == 19
    iterations = by_cat.get("iteration", [])
    assert sorted(e["name"] for e in iterations) == [f"iteration {i}" for i in range(1, n + 1)]
    assert all(parent[id(e)] is loops[0] for e in iterations)
    conds = [e for e in by_cat["function"] if e["name"] == "more"]
    assert len(conds) == n + 1 and all(parent[id(e)] is loops[0] for e in conds)
    linears = [e for e in by_cat["op"] if e["name"] == "linear"]
    assert len(linears) == n and all(parent[id(e)]["cat"] == "iteration" for e in linears)
    assert all(e["args"]["function"] == "step" and e["args"]["ir"] == "linear_0 = linear(x, w)" for e in linears)
    # the instructions of the run, less the call (shown as its function's slice)
    assert len(by_cat["op"]) + len(loops) == sum(expected_counts(n).values()) - 1


def test_no_trace_unless_asked(program, rng):
    p = tensorvm.load(program)
    prof = p.profile("main", rng.standard_normal((3, 8)).astype(np.float32), 2, trace=False)
    with pytest.raises(_C.VMError, match="no trace was recorded"):
        prof.trace_events()


def test_profile_checks_its_inputs(program):
    p = tensorvm.load(program)
    with pytest.raises(TypeError, match="missing input 'n'"):
        p.profile("main", np.ones((1, 8), np.float32))
    with pytest.raises(TypeError, match="no input 'm'"):
        p.profile("main", np.ones((1, 8), np.float32), m=1)
    with pytest.raises(ValueError, match="repeat"):
        p.profile("main", np.ones((1, 8), np.float32), 1, repeat=0)


def test_cli_profile(program, tmp_path, capsys, rng):
    np.savez(tmp_path / "in.npz", x=rng.standard_normal((2, 8)).astype(np.float32))
    trace = tmp_path / "out.json"
    code = main(["profile", str(program), "main", "--inputs", str(tmp_path / "in.npz"), "--arg", "n=3",
                 "--warmup", "1", "--repeat", "2", "--top", "4", "--trace", str(trace)])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out.startswith(f"profile of main in {program}: 2 runs, 1 thread")
    assert "(interpreter)" in out and "call (inclusive)" in out and "function:line" in out
    assert re.search(r"^linear +6 ", out, re.M)  # 3 iterations, 2 runs; the warm-up is not counted
    doc = json.loads(trace.read_text())
    assert sum(e.get("cat") == "run" for e in doc["traceEvents"]) == 2
    code = main(["profile", str(program), "main", "--arg", "n=1", "--trace", str(tmp_path / "t.txt")])
    assert code == 1 and "must end in .json" in capsys.readouterr().err


def test_cpu_time_clock_counts_the_same(program, rng):
    p = tensorvm.load(program)
    prof = p.profile("main", rng.standard_normal((3, 8)).astype(np.float32), 3, cpu_time=True)
    assert {(i["function"], i["line"]): i["count"] for i in prof.instructions} == expected_counts(3)
    check_nesting(prof.trace_events()["traceEvents"])
    assert prof.run_seconds >= 0


def test_tensorvm_run_profile_and_trace(program, tmp_path, rng):
    import subprocess

    from pyc_helpers import tensorvm_run_tool

    np.savez(tmp_path / "in.npz", x=rng.standard_normal((2, 8)).astype(np.float32))
    trace = tmp_path / "run.json"
    res = subprocess.run([tensorvm_run_tool(), str(program), "main", "--inputs", str(tmp_path / "in.npz"),
                          "--arg", "n=4", "--trace", str(trace)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert re.search(r"^linear +4 ", res.stdout, re.M) and "(interpreter)" in res.stdout
    doc = json.loads(trace.read_text())
    check_nesting(doc["traceEvents"])
    assert sum(e.get("cat") == "iteration" for e in doc["traceEvents"]) == 4
    res = subprocess.run([tensorvm_run_tool(), str(program), "main", "--trace", "t.txt"], capture_output=True, text=True)
    assert res.returncode != 0 and "must end in .json" in res.stderr
