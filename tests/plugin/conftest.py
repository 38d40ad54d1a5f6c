"""Helpers for plugin tests: inner pytest runs with their own ini (the outer one is strict).

Inner runs leave out plugins they do not need (hypothesis alone costs about a second per run,
and pytest-benchmark, when installed, warns inside xdist workers).
"""

from __future__ import annotations

from collections.abc import Callable

# httpx imports httpcore lazily, at its first transport. Imported inside an in-process inner
# run, pytester would drop it from ``sys.modules`` afterwards; the next import makes new
# exception classes that httpx's cached mapping no longer recognises, so a later stream cut
# escapes as a raw ``httpcore.RemoteProtocolError``. Importing it here keeps one copy.
import httpcore  # noqa: F401
import pytest

INI = """\
[pytest]
addopts = -p no:hypothesispytest -p no:benchmark -p no:cacheprovider
asyncio_mode = {mode}
asyncio_default_fixture_loop_scope = function
filterwarnings =
    error
{extra}
"""

MakeIni = Callable[..., None]


@pytest.fixture(name="make_ini")
def _make_ini(pytester: pytest.Pytester) -> MakeIni:
    """Write the inner run's ini: pytest-asyncio ``mode``, warnings as errors, ``extra`` lines."""

    def make(*, mode: str = "strict", extra: str = "") -> None:
        pytester.makeini(INI.format(mode=mode, extra=extra))

    return make


@pytest.fixture(name="inner")
def _inner(pytester: pytest.Pytester, make_ini: MakeIni) -> pytest.Pytester:
    """A pytester with the default inner ini (strict asyncio, warnings are errors)."""
    make_ini()
    return pytester
