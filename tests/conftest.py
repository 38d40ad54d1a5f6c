"""Suite-wide guard: no sandbox process of this test process may outlive the run."""

from __future__ import annotations

import os

import pytest

from fake_server.runtime.process.rootdir import BASE_NAME, processes_naming


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Processes still running from a process-runtime directory this process created.
    strays = processes_naming(f"/{BASE_NAME}/{os.getpid()}-".encode())
    if strays:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(f"sandbox processes left running after the tests: {strays}")
