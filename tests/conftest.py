"""Suite-wide guard: no sandbox process of this test process may outlive the run (checked by
the serial run CI makes; an xdist worker's own exit status does not reach the controller)."""

from __future__ import annotations

import os

import pytest

from fake_server.runtime.process.rootdir import BASE_NAME, processes_naming

_STRAYS = pytest.StashKey[list[int]]()


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Processes still running from a process-runtime directory this process created.
    strays = processes_naming(f"/{BASE_NAME}/{os.getpid()}-".encode())
    session.config.stash[_STRAYS] = strays
    if strays:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    strays = config.stash.get(_STRAYS, [])
    if strays:
        terminalreporter.write_line(f"sandbox processes left running after the tests: {strays}")
