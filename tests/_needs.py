"""What a test needs beyond what the README's install brings, and the line that installs it.

``pip install -e '.[test]' && pytest`` must pass on a fresh machine: a test that needs
something the ``test`` extra cannot install (a Debian package, a client installed without its
dependencies, an npm package) is skipped there, its reason the line that installs it. Under
``CI=true`` (``.ci/run`` installs everything) such a test fails instead, naming the same line:
a CI run never turns green by skipping what it was meant to check.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest

__all__ = ["CI", "MARK", "act", "needs", "needs_command", "needs_module", "on_ci"]

#: The marker ``needs`` puts on a test whose need is missing (``tests/conftest.py`` acts on it).
MARK = "needs"


def on_ci() -> bool:
    """Whether this run is CI's (``CI=true``, as GitHub Actions and most runners set it)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


#: Read once, at import (collection): what a test run sees.
CI = on_ci()


def needs(missing: str | None, install: str) -> pytest.MarkDecorator:
    """A mark for a test that needs something: none when ``missing`` is ``None``, else a skip
    (a fail under ``CI=true``) whose reason is ``needs <missing>: <install>``."""
    if missing is None:
        return pytest.mark.skipif(False, reason="")  # nothing missing: a mark that does nothing
    return pytest.mark.needs(f"needs {missing}: {install}")


def needs_module(module: str, distribution: str, install: str) -> pytest.MarkDecorator:
    """``needs`` for a Python module (``distribution`` names the package to install)."""
    found = importlib.util.find_spec(module) is not None
    return needs(None if found else distribution, install)


def needs_command(command: str, what: str, install: str) -> pytest.MarkDecorator:
    """``needs`` for a program on ``PATH``."""
    return needs(None if shutil.which(command) else what, install)


def act(item: pytest.Item) -> None:
    """Skip ``item`` (fail it under ``CI=true``) when it carries a missing need."""
    mark = item.get_closest_marker(MARK)
    if mark is None:
        return
    reason = str(mark.args[0])
    if on_ci():
        pytest.fail(f"CI=true and {reason} (.ci/run installs it)", pytrace=False)
    pytest.skip(reason)
