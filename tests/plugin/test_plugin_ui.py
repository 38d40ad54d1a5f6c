"""``--createos-ui`` is refused where nobody could press Enter: no terminal, or xdist.
The pause itself, on a terminal, is tests/plugin/test_plugin_ui_pause.py."""

from __future__ import annotations

import io
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest


def test_refused_without_a_terminal(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "__stdin__", io.StringIO())
    inner.makepyfile("def test_nothing():\n    pass\n")
    result = inner.runpytest("--createos-ui")
    assert result.ret == 4  # a usage error, before any test runs
    result.stderr.fnmatch_lines(
        [
            "ERROR: --createos-ui waits for Enter after a failing test, but stdin is not a "
            "terminal (CI, a pipe, or pytest -s < file); run it from an interactive shell"
        ]
    )


def test_refused_under_xdist(inner: pytest.Pytester) -> None:
    inner.makepyfile("def test_nothing():\n    pass\n")
    result = inner.runpytest("--createos-ui", "-n", "2")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["ERROR: --createos-ui needs one process: its workers have no terminal; drop -n"]
    )
