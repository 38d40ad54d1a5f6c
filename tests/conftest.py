"""Suite-wide guard: no sandbox process of this test process may outlive the run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fake_server.runtime.process.rootdir import BASE_NAME


def _strays() -> list[int]:
    """Processes still running from a process-runtime directory this process created."""
    needle = f"/{BASE_NAME}/{os.getpid()}-".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def pytest_sessionfinish(session: pytest.Session) -> None:
    strays = _strays()
    if strays:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(f"sandbox processes left running after the tests: {strays}")
