"""Helpers for plugin tests: inner pytest runs with their own ini (the outer one is strict).

Inner runs leave out plugins they do not need (hypothesis alone costs about a second per run,
and pytest-benchmark, when installed, warns inside xdist workers).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from collections.abc import Callable, Iterator
from typing import Any

# httpx imports httpcore lazily, at its first transport. Imported inside an in-process inner
# run, pytester would drop it from ``sys.modules`` afterwards; the next import makes new
# exception classes that httpx's cached mapping no longer recognises, so a later stream cut
# escapes as a raw ``httpcore.RemoteProtocolError``. Importing it here keeps one copy.
import httpcore  # noqa: F401
import pytest

# Modules the fake and the plugin import lazily, inside an inner run: imported here, pytester
# keeps them instead of dropping them after each run (each was imported again 15 to 70 times).
for _lazy in (
    "_pytest.stepwise",
    "fake_server.models.resources.disks",
    "fake_server.models.resources.dockerfile",
    "fake_server.models.resources.networks",
    "fake_server.models.resources.holdings",
    "fake_server.models.resources.templates",
    "fake_server.runtime.bashkit.mounts",
    "pytest_createos._leases",
    "pytest_createos._ui",
):
    importlib.import_module(_lazy)

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


class _ReadOnce(importlib.metadata.Distribution):
    """An installed distribution whose entry points, files and metadata are read once."""

    def __init__(self, dist: importlib.metadata.Distribution) -> None:
        self._dist = dist

    def read_text(self, filename: str) -> str | None:
        return self._dist.read_text(filename)

    def locate_file(self, path: Any) -> Any:
        return self._dist.locate_file(path)

    @functools.cached_property
    def entry_points(self) -> importlib.metadata.EntryPoints:  # type: ignore[override]
        return self._dist.entry_points

    @functools.cached_property
    def files(self) -> list[importlib.metadata.PackagePath] | None:  # type: ignore[override]
        return self._dist.files

    @functools.cached_property
    def metadata(self) -> Any:  # type: ignore[override]
        return self._dist.metadata


@pytest.fixture(autouse=True, scope="session")
def _distributions_read_once() -> Iterator[None]:
    """Every inner run lists the installed distributions twice (plugin autoload, and which
    modules to rewrite), parsing each one's metadata: about 40 ms a run. Nothing is installed
    during the tests, so they read one snapshot; the inner runs load the same plugins."""
    everything = importlib.metadata.distributions
    snapshot = [_ReadOnce(dist) for dist in everything()]

    def distributions(**kwargs: Any) -> Iterator[importlib.metadata.Distribution]:
        return everything(**kwargs) if kwargs else iter(snapshot)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(importlib.metadata, "distributions", distributions)
        yield


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
