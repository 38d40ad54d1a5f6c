"""The regression gate (``benchmarks/gate.py``): the benchmarks' quick mode, each ratio goal
allowed to miss by at most 1.5x. It passes on this tree, and fails, naming the goal, when
the fake's request path is made slower on purpose."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.reliability

ROOT = Path(__file__).resolve().parents[1]

#: Imported first by every interpreter started with it on ``PYTHONPATH``: each request the
#: fake serves spins 2 ms of CPU, about ten times what the fake's own handling costs.
_SLOWDOWN = """
import time

import fake_server.http.middlewares as middlewares

_serve = middlewares._serve


async def slower(request, handler, clock):
    end = time.process_time() + 0.002
    while time.process_time() < end:
        pass
    return await _serve(request, handler, clock)


middlewares._serve = slower
"""


def _gate(*args: str, pythonpath: str = "") -> subprocess.CompletedProcess[str]:
    paths = [p for p in (pythonpath, str(ROOT), os.environ.get("PYTHONPATH", "")) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    command = [sys.executable, str(ROOT / "benchmarks" / "run_all.py"), "--quick", "--gate"]
    return subprocess.run(
        [*command, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )


def _table(output: str) -> list[str]:
    """The gate's table: from its header to its last line."""
    lines = output.splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith("benchmark  ratio goal"))
    return lines[start:]


def test_the_gate_passes_on_this_tree() -> None:
    done = _gate()
    table = _table(done.stdout)
    assert done.returncode == 0, "\n".join(table) + done.stderr[-2000:]
    assert table[-1] == "gate: passed (tolerance 1.5x of each goal)"
    assert not [line for line in table if line.endswith("FAILED")]
    gated = {line.split()[0] for line in table[2:-1]}
    assert gated == {"http2", "plugin", "provider", "requests", "sandboxes", "startup", "transfer"}


def test_the_gate_fails_on_a_deliberate_slowdown(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(_SLOWDOWN)
    done = _gate("--only", "requests", pythonpath=str(tmp_path))
    table = _table(done.stdout)
    assert done.returncode == 1, "\n".join(table)
    assert table[-1] == "gate: FAILED (tolerance 1.5x of each goal)"
    rate = next(line for line in table if "fake rate / bare rate" in line)
    assert rate.split()[-1] == "FAILED"
    assert rate.split()[-3:-1] == ["0.333", "x"]  # the gate's bound: the goal 0.5x over 1.5
