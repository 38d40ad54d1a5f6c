"""The CreateOS lease provider: leases, command execution and file sync over the CreateOS API.

Private modules behind this curated namespace; it never imports ``fake_server``.
"""

from __future__ import annotations

from pytest_createos.provider._errors import (
    ConnectionFailedError,
    CreateosApiError,
    CreateosCleanupError,
    CreateosError,
)
from pytest_createos.provider._pacing import Pacer
from pytest_createos.provider._provider import CreateosProvider
from pytest_createos.provider._signal import OperationCancelled, OperationTimeout
from pytest_createos.provider._types import (
    ConfigValidation,
    Environment,
    ExecuteResult,
    FileMapping,
    Lease,
    LogSink,
    MappingKind,
    PostUploadCommand,
    ProbeResult,
    RealizedWorkspace,
    SandboxStatus,
    StreamName,
    SyncOperation,
    SyncOperationResult,
    SyncResult,
)

__all__ = [
    "ConfigValidation",
    "ConnectionFailedError",
    "CreateosApiError",
    "CreateosCleanupError",
    "CreateosError",
    "CreateosProvider",
    "Environment",
    "ExecuteResult",
    "FileMapping",
    "Lease",
    "LogSink",
    "MappingKind",
    "OperationCancelled",
    "OperationTimeout",
    "Pacer",
    "PostUploadCommand",
    "ProbeResult",
    "RealizedWorkspace",
    "SandboxStatus",
    "StreamName",
    "SyncOperation",
    "SyncOperationResult",
    "SyncResult",
]
