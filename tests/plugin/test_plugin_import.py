"""Loading the plugin is cheap: a pytest run in a project with pytest-createos installed that
uses none of its fixtures (``--collect-only``, or a suite of other tests) never imports the
fake, about 200 ms of every start and of every xdist worker's. The plugin keeps its own
copies of the few facts it needs before a fixture runs, held to the fake's here."""

from __future__ import annotations

import os
import subprocess
import sys

from fake_server.models.transitions import ENDING, GONE, STATUSES
from pytest_createos._report import LEAKING


def test_loading_the_plugin_imports_no_fake() -> None:
    code = (
        "import sys, pytest_createos.plugin\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'fake_server', 'aiohttp'}))"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert done.stdout == "[]\n", done.stdout


def test_the_plugin_counts_as_leaked_every_status_not_on_the_way_out() -> None:
    assert frozenset(STATUSES) - ENDING - GONE == LEAKING
