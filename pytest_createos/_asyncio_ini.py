"""pytest-asyncio's one setting the plugin chooses when the project has not, and what an
async test of ours says when nothing will run it (no marker, or pytest-asyncio not installed).

pytest-asyncio warns on every run (a ``PytestDeprecationWarning`` printed before the header)
while ``asyncio_default_fixture_loop_scope`` is unset. The plugin's fixtures are synchronous
(their work runs on the plugin's own loop), so the value does not change them; ``function``,
pytest-asyncio's announced default, becomes the setting's default. A value from the project's
configuration or ``-o`` still wins: pytest returns a declared default only for a setting
nobody gave.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

__all__ = [
    "LOOP_SCOPE_HELP",
    "LOOP_SCOPE_INI",
    "NO_ASYNCIO",
    "NO_MARKER",
    "NO_MARKER_NO_ASYNCIO",
    "asyncio_runs",
    "declare_loop_scope_default",
    "missing_asyncio",
    "register_asyncio_marker",
]

LOOP_SCOPE_INI = "asyncio_default_fixture_loop_scope"
LOOP_SCOPE_HELP = (
    "default scope of the asyncio event loop used to execute async fixtures "
    "(function when unset: pytest-createos's choice, pytest-asyncio's announced default)"
)


def asyncio_runs(pluginmanager: pytest.PytestPluginManager) -> bool:
    """pytest-asyncio is registered: by its entry point (``asyncio``) or by a conftest's
    ``pytest_plugins`` (under its module's name, even with ``-p no:asyncio``)."""
    return pluginmanager.hasplugin("asyncio") or any(
        getattr(plugin, "__name__", "").partition(".")[0] == "pytest_asyncio"
        for plugin in pluginmanager.get_plugins()
    )


def declare_loop_scope_default(
    pluginmanager: pytest.PytestPluginManager, parser: pytest.Parser
) -> bool:
    """Declare the loop scope's default as ``function`` where pytest-asyncio runs; whether it did.

    ``Parser.addini`` is pytest's public way to declare a setting and its default; declaring
    pytest-asyncio's setting again, once every plugin has declared its own (from
    ``pytest_load_initial_conftests``), replaces only the default. pytest-asyncio reads the
    value in its ``pytest_configure``, which runs later.
    """
    if not asyncio_runs(pluginmanager):
        return False
    parser.addini(LOOP_SCOPE_INI, LOOP_SCOPE_HELP, type="string", default="function")
    return True


#: A ``@pytest.mark.asyncio`` test of ours where pytest-asyncio is not installed.
NO_ASYNCIO = (
    "@pytest.mark.asyncio needs pytest-asyncio, which is not installed: "
    "pip install 'pytest-createos[asyncio]'"
)


def register_asyncio_marker(config: pytest.Config) -> None:
    """Without pytest-asyncio, ``asyncio`` is still a known marker, so a test marked with it
    reaches ``missing_asyncio`` instead of an unknown-marker warning."""
    if not asyncio_runs(config.pluginmanager):
        config.addinivalue_line("markers", "asyncio: needs pytest-asyncio (not installed)")


#: An ``async def`` test of ours without a marker, where pytest-asyncio runs (strict mode).
NO_MARKER = (
    "async def {name} has no marker, so nothing runs it: add @pytest.mark.asyncio "
    "(pytest-asyncio is installed, in strict mode), or set asyncio_mode = auto in the pytest "
    "configuration"
)
#: The same without pytest-asyncio.
NO_MARKER_NO_ASYNCIO = (
    "async def {name} has no marker, so nothing runs it: pip install "
    "'pytest-createos[asyncio]' and add @pytest.mark.asyncio"
)
#: Markers (and anyio's fixture) under which another plugin runs an async test.
_OTHER_RUNNERS = ("anyio", "trio")


def missing_asyncio(item: pytest.Item, uses_createos: bool) -> str | None:
    """Why ``item`` cannot run, for a test using our fixtures: marked ``asyncio`` without the
    plugin that runs it, or ``async def`` with no marker (pytest would say only "async def
    functions are not natively supported" and list plugins to install)."""
    if not uses_createos:
        return None
    runs = asyncio_runs(item.config.pluginmanager)
    if item.get_closest_marker("asyncio") is not None:
        return None if runs else NO_ASYNCIO
    if not _unmarked_async(item):
        return None
    name = getattr(item, "originalname", item.name)
    return (NO_MARKER if runs else NO_MARKER_NO_ASYNCIO).format(name=name)


def _unmarked_async(item: pytest.Item) -> bool:
    """An ``async def`` test no plugin claims (pytest-asyncio's auto mode marks every one)."""
    if not inspect.iscoroutinefunction(getattr(item, "obj", None)):
        return False
    if any(item.get_closest_marker(name) is not None for name in _OTHER_RUNNERS):
        return False
    return "anyio_backend" not in getattr(item, "fixturenames", ())
