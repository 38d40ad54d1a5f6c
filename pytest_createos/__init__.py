"""pytest-createos: fixtures and markers for testing CreateOS sandbox code against a fake.

The names here are the types tests annotate fixtures with, the provider's errors (to catch
them: ``CreateosError`` and its subclasses) and every fault action (so a test needs one
import: ``from pytest_createos import Fault, HttpError, CreateosApiError``). They load on first
access, so importing the provider never imports ``fake_server`` and pytest starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fake_server import FakeCreateOS as FakeCreateOS
    from fake_server import TransitionPolicy as TransitionPolicy
    from fake_server import VirtualClock as VirtualClock
    from fake_server.faults import Fault as Fault
    from fake_server.faults import FaultFiring as FaultFiring

    # Every fault action, for type checkers; at run time ``__getattr__`` finds them.
    from fake_server.faults.actions import *  # noqa: F403
    from fake_server.faults.resource_actions import *  # noqa: F403
    from pytest_createos._bridge import RunSync as RunSync
    from pytest_createos._leases import LeaseFactory as LeaseFactory
    from pytest_createos._report import CreateosWarning as CreateosWarning
    from pytest_createos._shared import SharedCreateOS as SharedCreateOS
    from pytest_createos.provider import ConnectionFailedError as ConnectionFailedError
    from pytest_createos.provider import CreateosApiError as CreateosApiError
    from pytest_createos.provider import CreateosCleanupError as CreateosCleanupError
    from pytest_createos.provider import CreateosError as CreateosError
    from pytest_createos.provider import CreateosProvider as CreateosProvider
    from pytest_createos.provider import Environment as Environment
    from pytest_createos.provider import ExecuteResult as ExecuteResult
    from pytest_createos.provider import Lease as Lease
    from pytest_createos.provider import OperationCancelled as OperationCancelled
    from pytest_createos.provider import OperationTimeout as OperationTimeout

    #: The fault actions' names (``fake_server.faults.catalog.ACTION_NAMES``).
    FAULT_ACTIONS: tuple[str, ...]

#: Where each name besides the fault actions lives (``__all__`` is these and the actions).
_LAZY = {
    "ConnectionFailedError": "pytest_createos.provider",
    "CreateosApiError": "pytest_createos.provider",
    "CreateosCleanupError": "pytest_createos.provider",
    "CreateosError": "pytest_createos.provider",
    "CreateosProvider": "pytest_createos.provider",
    "CreateosWarning": "pytest_createos._report",
    "Environment": "pytest_createos.provider",
    "ExecuteResult": "pytest_createos.provider",
    "FakeCreateOS": "fake_server",
    "Lease": "pytest_createos.provider",
    "LeaseFactory": "pytest_createos._leases",
    "OperationCancelled": "pytest_createos.provider",
    "OperationTimeout": "pytest_createos.provider",
    "RunSync": "pytest_createos._bridge",
    "SharedCreateOS": "pytest_createos._shared",
    "TransitionPolicy": "fake_server",
    "VirtualClock": "fake_server",
    "Fault": "fake_server.faults",
    "FaultFiring": "fake_server.faults",
}


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return sorted([*_LAZY, *_fault_actions()])
    if name == "FAULT_ACTIONS":
        return _fault_actions()
    module = _LAZY.get(name)
    if module is None and name[:1].isupper() and name in _fault_actions():
        module = "fake_server.faults"
    if module is None:
        raise AttributeError(f"module 'pytest_createos' has no attribute {name!r}")
    import importlib

    # Not cached here: the module's own attribute stays the one source (a re-imported
    # fake_server, as in pytester's in-process runs, must not meet an older class).
    return getattr(importlib.import_module(module), name)


def _fault_actions() -> tuple[str, ...]:
    """The fault actions' names, from the one list (``fake_server.faults.catalog``)."""
    from fake_server.faults.catalog import ACTION_NAMES

    return ACTION_NAMES
