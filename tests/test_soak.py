"""A short soak of ``createos-fake serve``: after each wave it holds what it held before.

``benchmarks/soak.py`` is the long version (``--waves 20``); this runs three waves on the
process runtime under CI's ``ulimit -n 1024``, and one on bashkit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.reliability

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("runtime", "waves"), [("process", 3), ("bashkit", 1)])
def test_serve_returns_to_its_baseline_after_every_wave(runtime: str, waves: int) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.soak",
            "--waves",
            str(waves),
            "--sandboxes",
            "4",
            "--runtime",
            runtime,
        ],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "flat"
    assert done.stdout.count("then back to baseline") == waves
