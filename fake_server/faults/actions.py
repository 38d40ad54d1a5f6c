"""What a fault does when it fires: the action types.

Actions are small frozen dataclasses so a fault is plain data: it can be printed in a failing
test's journal, compared, and built from the JSON control API. Four families:

* response actions replace or break the reply (``HttpError``, transport faults, ``LostReply``);
* stream actions corrupt an NDJSON stream or a file download while it is being written;
* ``Latency`` delays the request on the fake's clock and then lets it through;
* out-of-band actions change the world at the moment of the call (a sandbox fails, a file is
  tampered with, a process crashes) and then let the request run against the changed world.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal

from fake_server.faults.aim import AIM_IDS, Aim, TargetError, UnknownTargetError
from fake_server.faults.lookups import process_of, sandbox_of
from fake_server.models.sandbox import STATUSES
from fake_server.operations import named

if TYPE_CHECKING:
    from fake_server.models import World


#: Operations whose body is written incrementally (NDJSON frames or raw file bytes).
STREAM_OPERATIONS = named(stream="frames") | named(stream="events") | named(stream="bytes")
#: Operations whose body is NDJSON frames (frame-level corruption makes sense only there).
FRAME_OPERATIONS = named(stream="frames") | named(stream="events")

#: Sandbox statuses an out-of-band ``SetStatus`` may force (docs/fake-server.md#state-machine).
SANDBOX_STATUSES = frozenset(STATUSES)


def _non_negative_int(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0")


#: Longest delay an action may ask for (about 31 years): past it a real clock's sleep overflows.
MAX_SECONDS = 10**9


def _seconds(value: object, name: str) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= MAX_SECONDS
    ):
        raise ValueError(f"{name} must be a number of seconds between 0 and {MAX_SECONDS}")


def _text(value: object, name: str, *, optional: bool = False) -> None:
    if not isinstance(value, str) and not (optional and value is None):
        raise ValueError(f"{name} must be a string")


class Action:
    """Base of every action; ``kind`` is the JSON ``type`` used by the control API."""

    kind: ClassVar[str] = ""
    #: Operations this action can apply to; ``None`` means any.
    operations: ClassVar[frozenset[str] | None] = None

    def applies_to(self, operation: str) -> bool:
        return self.operations is None or operation in self.operations


class ResponseAction(Action):
    """Decides the reply; at most one fires per request (the first armed one wins)."""


class StreamAction(ResponseAction):
    """Corrupts a streamed body; the handler still runs and writes through a wrapped writer."""

    operations: ClassVar[frozenset[str] | None] = FRAME_OPERATIONS


class OutOfBandAction(Action):
    """Changes the world at the moment of the call, then lets the request through.

    Each action applies itself to the fake's ``World`` (on the fake's loop: ``faults.handle``),
    raising ``UnknownTargetError``, ``TargetError`` or ``TargetConflictError`` (``faults.aim``)
    for a change the world cannot take. ``needs`` names the ids it must know
    (``Aim`` fields): each comes from the action's own field of that name, else from the call
    (or the control API's body); a call that does not name them is not matched.
    """

    needs: ClassVar[tuple[str, ...]] = ("sandbox_id",)

    def __post_init__(self) -> None:
        """Ids the action names itself are checked here: ``aim()`` trusts them."""
        for name in AIM_IDS:
            value = getattr(self, name, None)
            if value is not None and (not isinstance(value, str) or not value or len(value) > 200):
                raise ValueError(f"{name} must be a non-empty string of at most 200 characters")

    def aim(self, known: Aim) -> Aim | None:
        """The ids this action hits given what the call names (its own fields win), or None."""
        ids = {name: getattr(self, name, None) or getattr(known, name) for name in AIM_IDS}
        aim = Aim(**ids, account=known.account)
        return aim if all(getattr(aim, name) for name in self.needs) else None

    def apply(self, world: World, aim: Aim) -> None:
        raise NotImplementedError  # pragma: no cover - every concrete action overrides it


# -- response actions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HttpError(ResponseAction):
    """Answer with ``status`` and the real error envelope instead of running the operation.

    ``retry_after`` adds a ``Retry-After`` header (seconds); ``code``/``message`` override the
    envelope's defaults for the status.
    """

    kind: ClassVar[str] = "http_error"
    status: int
    retry_after: int | None = None
    code: str | None = None
    message: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.status, bool) or not isinstance(self.status, int):
            raise ValueError("status must be an integer HTTP status")
        if not 400 <= self.status <= 599:
            raise ValueError("status must be an HTTP error status between 400 and 599")
        if self.retry_after is not None:
            _non_negative_int(self.retry_after, "retry_after")
        _text(self.code, "code", optional=True)
        _text(self.message, "message", optional=True)


@dataclass(frozen=True)
class ResetBeforeResponse(ResponseAction):
    """Reset the connection (TCP RST) before any byte of the reply: httpx raises ReadError."""

    kind: ClassVar[str] = "reset"


@dataclass(frozen=True)
class EmptyReply(ResponseAction):
    """Close the connection cleanly without a reply: httpx raises RemoteProtocolError."""

    kind: ClassVar[str] = "empty_reply"


@dataclass(frozen=True)
class ResetAfterHeaders(ResponseAction):
    """Send a status line and headers, then drop the connection before the body.

    With ``status=None`` (the default) the operation runs first and its own status and headers
    go out, as when a server commits, starts replying and dies; a client that trusts the status
    without reading the body (uploads) sees success. With an explicit ``status`` the operation
    never runs, as when a proxy answers and then fails.
    """

    kind: ClassVar[str] = "reset_after_headers"
    status: int | None = None

    def __post_init__(self) -> None:
        if self.status is None:
            return
        if isinstance(self.status, bool) or not isinstance(self.status, int):
            raise ValueError("status must be an integer HTTP status")
        if not 200 <= self.status <= 599:
            raise ValueError("status must be an HTTP status between 200 and 599")


@dataclass(frozen=True)
class LostReply(ResponseAction):
    """Run the operation (its side effect is committed), then drop the connection.

    This is the ambiguous case: the sandbox was created, the process started, the pause was
    accepted, but the client never learns it.
    """

    kind: ClassVar[str] = "lost_reply"


# -- stream actions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CutStream(StreamAction):
    """End the body after ``after_frames`` frames or ``after_bytes`` bytes.

    ``mode="reset"`` drops the connection (a network read failure); ``mode="eof"`` ends the
    body cleanly, so the client sees a stream that ended without an exit frame.
    Heartbeats are not counted as frames (their number depends on idle time).
    """

    kind: ClassVar[str] = "cut_stream"
    operations: ClassVar[frozenset[str] | None] = STREAM_OPERATIONS
    after_frames: int | None = None
    after_bytes: int | None = None
    mode: Literal["reset", "eof"] = "reset"

    def __post_init__(self) -> None:
        if (self.after_frames is None) == (self.after_bytes is None):
            raise ValueError("CutStream needs exactly one of after_frames or after_bytes")
        if self.after_frames is not None:
            _non_negative_int(self.after_frames, "after_frames")
        if self.after_bytes is not None:
            _non_negative_int(self.after_bytes, "after_bytes")
        if self.mode not in ("reset", "eof"):
            raise ValueError('mode must be "reset" or "eof"')

    def applies_to(self, operation: str) -> bool:
        if self.after_frames is not None:
            return operation in FRAME_OPERATIONS
        return operation in STREAM_OPERATIONS


@dataclass(frozen=True)
class StallStream(StreamAction):
    """After ``after_frames`` frames, write nothing for ``seconds`` of fake time.

    ``seconds=None`` stalls until the client gives up and disconnects. No heartbeats are sent
    while stalled: the server looks hung.
    """

    kind: ClassVar[str] = "stall_stream"
    operations: ClassVar[frozenset[str] | None] = STREAM_OPERATIONS
    after_frames: int = 0
    seconds: float | None = None

    def __post_init__(self) -> None:
        _non_negative_int(self.after_frames, "after_frames")
        if self.seconds is not None:
            _seconds(self.seconds, "seconds")


@dataclass(frozen=True)
class MalformedFrame(StreamAction):
    """Write ``line`` (not valid JSON by default) as the frame after ``after_frames`` frames."""

    kind: ClassVar[str] = "malformed_frame"
    after_frames: int = 0
    line: str = '{"type": "data", "seq": '

    def __post_init__(self) -> None:
        _non_negative_int(self.after_frames, "after_frames")
        _text(self.line, "line")
        if "\n" in self.line:
            raise ValueError("line must not contain a newline")


@dataclass(frozen=True)
class _NumberedFrame(StreamAction):
    """An action on one data frame of ``/connect``, numbered from 1."""

    operations: ClassVar[frozenset[str] | None] = named(stream="frames")
    frame: int = 1

    def __post_init__(self) -> None:
        _non_negative_int(self.frame, "frame")
        if self.frame < 1:
            raise ValueError("frame must be an integer >= 1")


@dataclass(frozen=True)
class DuplicateFrame(_NumberedFrame):
    """Write data frame number ``frame`` (1-based) twice: a replayed ``seq``."""

    kind: ClassVar[str] = "duplicate_frame"


@dataclass(frozen=True)
class SkipFrame(_NumberedFrame):
    """Drop data frame number ``frame`` (1-based): the client sees a ``seq`` gap."""

    kind: ClassVar[str] = "skip_frame"


@dataclass(frozen=True)
class ExitWithoutStatus(StreamAction):
    """Replace the final exit frame with one that carries no ``exit_code`` and no ``signal``."""

    kind: ClassVar[str] = "exit_without_status"
    operations: ClassVar[frozenset[str] | None] = named(stream="frames")


@dataclass(frozen=True)
class TruncatedDownload(StreamAction):
    """Send only the first ``after_bytes`` bytes of a file download, then drop the connection."""

    kind: ClassVar[str] = "truncated_download"
    operations: ClassVar[frozenset[str] | None] = named(stream="bytes")
    after_bytes: int = 0

    def __post_init__(self) -> None:
        _non_negative_int(self.after_bytes, "after_bytes")


# -- latency ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Latency(Action):
    """Delay the request by ``seconds`` on the fake's clock, then handle it normally."""

    kind: ClassVar[str] = "latency"
    seconds: float

    def __post_init__(self) -> None:
        _seconds(self.seconds, "seconds")


# -- out-of-band actions ------------------------------------------------------------------------


@dataclass(frozen=True)
class SetStatus(OutOfBandAction):
    """Force the matched (or named) sandbox into ``status``, e.g. ``error``, ``failed``."""

    kind: ClassVar[str] = "set_status"
    status: str
    sandbox_id: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.status not in SANDBOX_STATUSES:
            raise ValueError("status must be one of: " + ", ".join(sorted(SANDBOX_STATUSES)))

    def apply(self, world: World, aim: Aim) -> None:
        sandbox_of(world, aim.id("sandbox_id")).force_status(self.status)


@dataclass(frozen=True)
class Forget(OutOfBandAction):
    """Make the matched (or named) sandbox disappear: every later request for it gets 404."""

    kind: ClassVar[str] = "forget"
    sandbox_id: str | None = None

    def apply(self, world: World, aim: Aim) -> None:
        sandbox_id = aim.id("sandbox_id")
        account = world.account_of(sandbox_id)
        if account is None:
            raise UnknownTargetError("no such sandbox")
        account.forget_sandbox(sandbox_id)


@dataclass(frozen=True)
class TamperFile(OutOfBandAction):
    """Overwrite ``path`` in the matched (or named) sandbox with ``data`` (e.g. the marker)."""

    kind: ClassVar[str] = "tamper_file"
    path: str
    data: bytes = field(default=b"tampered", repr=False)
    sandbox_id: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _text(self.path, "path")
        if not self.path.startswith("/"):
            raise ValueError("path must be absolute")
        if not isinstance(self.data, bytes):
            raise ValueError("data must be bytes")

    def apply(self, world: World, aim: Aim) -> None:
        """Errors of the sandbox's disk name the ``path`` field: the control API answers 400
        and an armed fault is skipped rather than failing the request."""
        sandbox = sandbox_of(world, aim.id("sandbox_id"))
        try:
            sandbox.disk.write_file(self.path, self.data)
        except IsADirectoryError:
            raise TargetError("is a directory in the sandbox", field="path") from None
        except NotADirectoryError:
            raise TargetError("has a parent that is not a directory", field="path") from None
        except (OSError, ValueError):
            raise TargetError("cannot be written in the sandbox", field="path") from None
        except RuntimeError:  # the disk was wiped: the sandbox is destroyed
            raise UnknownTargetError("no such sandbox") from None


@dataclass(frozen=True)
class EvictOutput(OutOfBandAction):
    """Evict the matched (or named) process's output journal up to ``up_to_seq`` (all: None)."""

    kind: ClassVar[str] = "evict_output"
    needs: ClassVar[tuple[str, ...]] = ("sandbox_id", "process_id")
    up_to_seq: int | None = None
    sandbox_id: str | None = None
    process_id: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.up_to_seq is not None:
            _non_negative_int(self.up_to_seq, "up_to_seq")

    def apply(self, world: World, aim: Aim) -> None:
        process_of(world, aim.id("sandbox_id"), aim.id("process_id")).evict_output(self.up_to_seq)


@dataclass(frozen=True)
class CrashProcess(OutOfBandAction):
    """Kill the matched (or named) process's tree with ``signal``, as if the OOM killer hit."""

    kind: ClassVar[str] = "crash_process"
    needs: ClassVar[tuple[str, ...]] = ("sandbox_id", "process_id")
    signal: str = "SIGKILL"
    sandbox_id: str | None = None
    process_id: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _text(self.signal, "signal")
        name = self.signal
        if not (name.startswith("SIG") and len(name) > 3 and name[3:].isalnum()):
            raise ValueError("signal must look like SIGKILL")
        if name != name.upper():
            raise ValueError("signal must look like SIGKILL")

    def apply(self, world: World, aim: Aim) -> None:
        process_of(world, aim.id("sandbox_id"), aim.id("process_id")).crash(self.signal)
