"""Public value types of the provider (what hosts pass in and persist) and internal parameters.

``config`` and lease ``metadata`` stay JSON dicts with the spec's camelCase keys because hosts
store them as JSON. Everything else is a small dataclass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

__all__ = [
    "ConfigValidation",
    "Environment",
    "ExecuteParams",
    "ExecuteResult",
    "FileMapping",
    "Lease",
    "LogSink",
    "MappingKind",
    "PostUploadCommand",
    "ProbeResult",
    "RealizedWorkspace",
    "SandboxStatus",
    "StreamName",
    "SyncOperation",
    "SyncOperationResult",
    "SyncResult",
]

#: The two output streams of a command.
StreamName = Literal["stdout", "stderr"]
#: Live output callback: ``log(stream, text)``; a plain function, or one returning an awaitable.
LogSink = Callable[[StreamName, str], object]
#: What a ``FileMapping`` transfers (anything else is refused before any transfer).
MappingKind = Literal["file", "directory"]
#: The sandbox states the API reports (docs/fake-server.md#state-machine); an unknown one
#: fails a transition fast. The provider never imports the fake: ``tests/provider/
#: test_statuses.py`` holds this list to the fake's ``models.transitions.STATUSES``.
SandboxStatus = Literal[
    "creating",
    "running",
    "pausing",
    "paused",
    "resuming",
    "forking",
    "destroying",
    "destroyed",
    "failed",
    "error",
]


@dataclass(frozen=True, slots=True)
class Environment:
    """Who is asking (company, environment) and the environment's raw provider config.

    Its repr never shows ``config["apiKey"]``: pytest prints fixture values in tracebacks.
    """

    company_id: str
    environment_id: str
    config: Mapping[str, Any]

    def __repr__(self) -> str:
        shown = {k: ("<redacted>" if k == "apiKey" else v) for k, v in self.config.items()}
        return (
            f"Environment(company_id={self.company_id!r}, "
            f"environment_id={self.environment_id!r}, config={shown!r})"
        )


@dataclass(frozen=True, slots=True)
class Lease:
    """A sandbox lease; ``provider_lease_id`` is ``None`` for an expired lease."""

    provider_lease_id: str | None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RealizedWorkspace:
    """Where commands run inside the sandbox."""

    cwd: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExecuteResult:
    """A command's outcome; a timeout keeps the output received so far."""

    exit_code: int | None
    signal: str | None
    timed_out: bool
    stdout: str
    stderr: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExecuteParams:
    """What ``_execute.execute_command`` runs (internal; the facade validated the lease)."""

    command: str
    args: Sequence[str] = ()
    cwd: str | None = None
    env: Mapping[str, Any] | None = None
    stdin: str | None = None


@dataclass(frozen=True, slots=True)
class FileMapping:
    """One file or directory to transfer; paths are validated before any transfer.

    See docs/provider-execution.md#file-sync.
    """

    kind: MappingKind
    source: str
    target: str
    mode: int | None = None
    exclude: Sequence[str] = ()
    follow_symlinks: bool | None = None


@dataclass(frozen=True, slots=True)
class PostUploadCommand:
    """A shell command run inside the sandbox after an inbound operation's files landed."""

    command: str
    cwd: str | None = None
    timeout_ms: int | None = None


@dataclass(frozen=True, slots=True)
class SyncOperation:
    """A batch of mappings plus (inbound only) commands to run afterwards."""

    operation_id: str
    mappings: Sequence[FileMapping] = ()
    post_upload_commands: Sequence[PostUploadCommand] = ()


class SyncOperationResult(NamedTuple):
    """Totals of one sync operation."""

    operation_id: str
    files_transferred: int
    bytes_transferred: int


@dataclass(frozen=True, slots=True)
class SyncResult:
    """Per-operation totals, in request order."""

    operations: list[SyncOperationResult] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """Whether a throwaway sandbox could be created and could run a command."""

    ok: bool
    summary: str


@dataclass(frozen=True, slots=True)
class ConfigValidation:
    """The outcome of ``validate_config``: the normalized config or the first error."""

    ok: bool
    normalized_config: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)
