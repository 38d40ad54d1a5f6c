"""pytest-createos: fixtures and markers for testing CreateOS sandbox code against a fake.

The names here are the types tests annotate fixtures with. They load on first access, so
importing the provider never imports ``fake_server`` and pytest starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock
    from fake_server.faults import Fault
    from pytest_createos._bridge import RunSync
    from pytest_createos._report import CreateosWarning
    from pytest_createos.provider import CreateosProvider, Environment, ExecuteResult, Lease

__all__ = [
    "CreateosProvider",
    "CreateosWarning",
    "Environment",
    "ExecuteResult",
    "FakeCreateOS",
    "Fault",
    "Lease",
    "RunSync",
    "TransitionPolicy",
    "VirtualClock",
]

_LAZY = {
    "CreateosProvider": "pytest_createos.provider",
    "CreateosWarning": "pytest_createos._report",
    "Environment": "pytest_createos.provider",
    "ExecuteResult": "pytest_createos.provider",
    "Lease": "pytest_createos.provider",
    "RunSync": "pytest_createos._bridge",
    "FakeCreateOS": "fake_server",
    "TransitionPolicy": "fake_server",
    "VirtualClock": "fake_server",
    "Fault": "fake_server.faults",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_createos' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
