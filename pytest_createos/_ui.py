"""``--createos-ui``: a failing test's fake stays up, shown in its dashboard, until Enter.

Refused unless stdin is a terminal (CI has none: a run would otherwise wait for ever), and
under pytest-xdist, whose workers have no terminal.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pytest_createos._session import Run

__all__ = ["check_ui", "pause_on_failure"]

NOT_A_TERMINAL = (
    "--createos-ui waits for Enter after a failing test, but stdin is not a terminal "
    "(CI, a pipe, or pytest -s < file); run it from an interactive shell"
)
UNDER_XDIST = "--createos-ui needs one process: its workers have no terminal; drop -n"


def check_ui(config: pytest.Config) -> None:
    """Refuse the option where nobody could press Enter."""
    if hasattr(config, "workerinput"):
        return  # the controller has decided
    numprocesses = config.getoption("numprocesses", None)
    if numprocesses not in (None, 0, "0"):
        raise pytest.UsageError(UNDER_XDIST)
    if not _stdin_is_a_terminal(config):
        raise pytest.UsageError(NOT_A_TERMINAL)


def _stdin_is_a_terminal(config: pytest.Config) -> bool:
    with _real_stdin(config):
        stdin = sys.__stdin__
        return stdin is not None and stdin.isatty()


@contextlib.contextmanager
def _real_stdin(config: pytest.Config) -> Iterator[None]:
    """The process's own stdin and stdout for a moment. While pytest captures, fd 0 is
    ``/dev/null``; in ``pytest_configure`` and ``pytest_runtest_makereport`` its capture is
    suspended for output but still holds stdin, and is left that way afterwards."""
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.suspend_global_capture(in_=True)
    try:
        yield
    finally:
        if capture is not None:
            capture.resume_global_capture()
            capture.suspend_global_capture(in_=False)


def pause_on_failure(item: pytest.Item, run: Run) -> None:
    """Print where to look and wait for Enter, with output capture off meanwhile."""
    from fake_server.dashboard import dashboard_url

    fake = run.fake
    sandboxes = fake.sandboxes()
    newest = sandboxes[-1].id if sandboxes else None
    lines = [
        "",
        f"createos: {item.nodeid} failed; its fake keeps serving:",
        f"  dashboard: {dashboard_url(fake.url, newest)}",
        f"  control key (the login): {fake.control_key}",
    ]
    lines += [f"  sandbox: {dashboard_url(fake.url, s.id)}" for s in sandboxes[:-1][-9:]]
    lines.append("  press Enter to go on")
    with _real_stdin(item.config):
        stream = sys.__stdout__ or sys.stdout
        stream.write("\n".join(lines) + "\n")
        stream.flush()
        stdin = sys.__stdin__
        if stdin is not None:
            stdin.readline()
