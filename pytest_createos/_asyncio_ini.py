"""pytest-asyncio's one setting the plugin chooses when the project has not, and what an
async test of ours says when pytest-asyncio is not installed.

pytest-asyncio warns on every run (a ``PytestDeprecationWarning`` printed before the header)
while ``asyncio_default_fixture_loop_scope`` is unset. The plugin's fixtures are synchronous
(their work runs on the plugin's own loop), so the value does not change them; it is set to
``function``, pytest-asyncio's announced default, only when the project's configuration and
``-o`` leave it unset. A project that sets it keeps its value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

__all__ = [
    "LOOP_SCOPE_INI",
    "NO_ASYNCIO",
    "default_asyncio_loop_scope",
    "missing_asyncio",
    "register_asyncio_marker",
]

LOOP_SCOPE_INI = "asyncio_default_fixture_loop_scope"


def default_asyncio_loop_scope(config: pytest.Config) -> bool:
    """Set the loop scope to ``function`` if pytest-asyncio runs and it is unset; whether set.

    Runs before pytest-asyncio's ``pytest_configure`` reads it. pytest has no public setter
    for another plugin's ini value: this fills pytest's ini cache, where ``getini`` looks
    first (pytest 8 and 9); the downstream-project test fails if that ever stops working.
    """
    if not config.pluginmanager.hasplugin("asyncio"):
        return False
    try:
        if config.getini(LOOP_SCOPE_INI):
            return False
    except ValueError:  # a pytest-asyncio without this setting
        return False
    cache = getattr(config, "_inicache", None)
    if not isinstance(cache, dict):
        return False
    cache[LOOP_SCOPE_INI] = "function"
    return True


#: A ``@pytest.mark.asyncio`` test of ours where pytest-asyncio is not installed.
NO_ASYNCIO = (
    "@pytest.mark.asyncio needs pytest-asyncio, which is not installed: "
    "pip install 'pytest-createos[asyncio]'"
)


def register_asyncio_marker(config: pytest.Config) -> None:
    """Without pytest-asyncio, ``asyncio`` is still a known marker, so a test marked with it
    reaches ``missing_asyncio`` instead of an unknown-marker warning."""
    if not config.pluginmanager.hasplugin("asyncio"):
        config.addinivalue_line("markers", "asyncio: needs pytest-asyncio (not installed)")


def missing_asyncio(item: pytest.Item, uses_createos: bool) -> str | None:
    """Why ``item`` cannot run: marked ``asyncio`` and using our fixtures, without the plugin
    that runs it (pytest would say only "async def functions are not natively supported")."""
    if not uses_createos or item.config.pluginmanager.hasplugin("asyncio"):
        return None
    return NO_ASYNCIO if item.get_closest_marker("asyncio") is not None else None
