"""pytest-createos: fixtures and markers for testing CreateOS sandbox code against a fake.

The names here are the types tests annotate fixtures with, and every fault action (so a test
needs one import: ``from pytest_createos import Fault, HttpError``). They load on first access,
so importing the provider never imports ``fake_server`` and pytest starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock
    from fake_server.faults import (
        CrashProcess,
        CutStream,
        DetachDisk,
        DuplicateFrame,
        EmptyReply,
        EvictOutput,
        ExhaustCredit,
        ExitWithoutStatus,
        FailTemplateBuild,
        Fault,
        FaultFiring,
        Forget,
        HttpError,
        Latency,
        LostReply,
        MalformedFrame,
        ResetAfterHeaders,
        ResetBeforeResponse,
        SetStatus,
        SkipFrame,
        StallStream,
        TamperFile,
        TruncatedDownload,
        VanishNetwork,
    )
    from pytest_createos._bridge import RunSync
    from pytest_createos._leases import LeaseFactory
    from pytest_createos._report import CreateosWarning
    from pytest_createos._shared import SharedCreateOS
    from pytest_createos.provider import CreateosProvider, Environment, ExecuteResult, Lease

#: The fault actions, re-exported from ``fake_server.faults``.
FAULT_ACTIONS = (
    "CrashProcess",
    "CutStream",
    "DetachDisk",
    "DuplicateFrame",
    "EmptyReply",
    "EvictOutput",
    "ExhaustCredit",
    "ExitWithoutStatus",
    "FailTemplateBuild",
    "Forget",
    "HttpError",
    "Latency",
    "LostReply",
    "MalformedFrame",
    "ResetAfterHeaders",
    "ResetBeforeResponse",
    "SetStatus",
    "SkipFrame",
    "StallStream",
    "TamperFile",
    "TruncatedDownload",
    "VanishNetwork",
)

__all__ = [
    "CrashProcess",
    "CreateosProvider",
    "CreateosWarning",
    "CutStream",
    "DetachDisk",
    "DuplicateFrame",
    "EmptyReply",
    "Environment",
    "EvictOutput",
    "ExecuteResult",
    "ExhaustCredit",
    "ExitWithoutStatus",
    "FailTemplateBuild",
    "FakeCreateOS",
    "Fault",
    "FaultFiring",
    "Forget",
    "HttpError",
    "Latency",
    "Lease",
    "LeaseFactory",
    "LostReply",
    "MalformedFrame",
    "ResetAfterHeaders",
    "ResetBeforeResponse",
    "RunSync",
    "SetStatus",
    "SharedCreateOS",
    "SkipFrame",
    "StallStream",
    "TamperFile",
    "TransitionPolicy",
    "TruncatedDownload",
    "VanishNetwork",
    "VirtualClock",
]

_LAZY = {
    "CreateosProvider": "pytest_createos.provider",
    "CreateosWarning": "pytest_createos._report",
    "Environment": "pytest_createos.provider",
    "ExecuteResult": "pytest_createos.provider",
    "FakeCreateOS": "fake_server",
    "Lease": "pytest_createos.provider",
    "LeaseFactory": "pytest_createos._leases",
    "RunSync": "pytest_createos._bridge",
    "SharedCreateOS": "pytest_createos._shared",
    "TransitionPolicy": "fake_server",
    "VirtualClock": "fake_server",
    **dict.fromkeys(("Fault", "FaultFiring", *FAULT_ACTIONS), "fake_server.faults"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_createos' has no attribute {name!r}")
    import importlib

    # Not cached here: the module's own attribute stays the one source (a re-imported
    # fake_server, as in pytester's in-process runs, must not meet an older class).
    return getattr(importlib.import_module(module), name)
