"""The ``/connect`` NDJSON frames and the captured output of a managed process.

The behaviour is described in docs/provider-execution.md#the-output-follower.

Three small pieces, all pure:

* ``LineSplitter`` turns decoded text chunks of one connection into lines, refusing any line
  longer than ``MAX_FRAME_CHARS`` (also while it is still incomplete, so a server that never
  sends a newline cannot make us buffer without bound).
* ``parse_frame`` validates one line into a typed frame; every protocol violation raises a
  ``CreateosError`` with the spec's fixed message (we fail closed rather than reconnect past
  bad data).
* ``ProcessOutput`` owns one incremental UTF-8 decoder per stream, so a character split across
  frames -- even across reconnects -- is decoded once, whole; passes every decoded chunk to the
  live log callback; and keeps only the last ``cap`` characters of each stream.

Characters are counted as Python ``str`` length, i.e. Unicode code points (the JavaScript
original counts UTF-16 code units; the two differ only for characters outside the BMP, and only
at the truncation boundary). See docs/provider-execution.md.
"""

from __future__ import annotations

import base64
import codecs
import inspect
import json
import math
import re
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._errors import CreateosError

if TYPE_CHECKING:
    from ._types import LogSink, StreamName

__all__ = [
    "MAX_CAPTURE_CHARS",
    "MAX_FRAME_CHARS",
    "DataFrame",
    "ErrorFrame",
    "ExitFrame",
    "Frame",
    "Heartbeat",
    "LineSplitter",
    "ProcessOutput",
    "StreamCapture",
    "parse_frame",
]

MAX_FRAME_CHARS = 1_048_576
MAX_CAPTURE_CHARS = 4_194_304
_MAX_SAFE_INTEGER = 2**53 - 1

FRAME_TOO_LARGE = "CreateOS process frame is too large."
INVALID_FRAME = "CreateOS returned an invalid process frame."
INVALID_SEQUENCE = "CreateOS process sequence is invalid."
SEQUENCE_GAP = "CreateOS process output has a sequence gap."
INVALID_OUTPUT = "CreateOS process output is invalid."
EXIT_MISSING = "CreateOS process exit status is missing."
EVICTED = "CreateOS process output was evicted before it could be read."
STREAM_ERROR = "CreateOS process stream reported an error."
UNKNOWN_EVENT = "CreateOS returned an unknown process event."

_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_SIGNAL = re.compile(r"SIG[A-Z0-9]+")


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Keeps the connection alive; carries nothing."""


@dataclass(frozen=True, slots=True)
class DataFrame:
    """One journal entry; ``data`` is only decoded once the frame is known to be new."""

    seq: int
    stream: object
    data_base64: object


@dataclass(frozen=True, slots=True)
class ExitFrame:
    """The process tree finished; at least one of the two is set."""

    exit_code: int | None
    signal: str | None


@dataclass(frozen=True, slots=True)
class ErrorFrame:
    """The server gave up on this stream (only ``output_offset_expired`` is known)."""

    error: object


Frame = Heartbeat | DataFrame | ExitFrame | ErrorFrame


class LineSplitter:
    """Split one connection's decoded text into non-blank lines, bounded in length."""

    def __init__(self, max_chars: int = MAX_FRAME_CHARS) -> None:
        self._max = max_chars
        self._pending: list[str] = []
        self._pending_len = 0

    def feed(self, text: str) -> list[str]:
        """Complete lines found so far; the unterminated tail is kept for the next chunk."""
        lines: list[str] = []
        start = 0
        while True:
            end = text.find("\n", start)
            if end < 0:
                break
            piece = text[start:end]
            if self._pending_len + len(piece) > self._max:
                raise CreateosError(FRAME_TOO_LARGE)
            if self._pending:
                self._pending.append(piece)
                piece = "".join(self._pending)
                self._pending.clear()
                self._pending_len = 0
            if piece.strip():
                lines.append(piece)
            start = end + 1
        rest = text[start:]
        if rest:
            if self._pending_len + len(rest) > self._max:
                raise CreateosError(FRAME_TOO_LARGE)
            self._pending.append(rest)
            self._pending_len += len(rest)
        return lines

    def finish(self) -> list[str]:
        """At end of stream a final unterminated line still counts."""
        piece = "".join(self._pending)
        self._pending.clear()
        self._pending_len = 0
        return [piece] if piece.strip() else []


def _reject_constant(name: str) -> object:
    raise ValueError(name)  # NaN/Infinity are not JSON


def _integer(value: object) -> int | None:
    """A JSON number that is a safe integer (``1.0`` counts, as in JavaScript), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if abs(value) <= _MAX_SAFE_INTEGER else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value) if abs(value) <= _MAX_SAFE_INTEGER else None
    return None


def parse_frame(line: str) -> Frame:
    """Validate one NDJSON line into a frame (sequence rules are the follower's job)."""
    try:
        obj = json.loads(line, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        raise CreateosError(INVALID_FRAME) from None
    if not isinstance(obj, dict):
        raise CreateosError(INVALID_FRAME)
    kind = obj.get("type")
    if kind == "heartbeat":
        return Heartbeat()
    if kind == "data":
        seq = _integer(obj.get("seq"))
        if seq is None or seq < 1:
            raise CreateosError(INVALID_SEQUENCE)
        return DataFrame(seq=seq, stream=obj.get("stream"), data_base64=obj.get("data_base64"))
    if kind == "exit":
        code = _integer(obj.get("exit_code"))
        raw_signal = obj.get("signal")
        signal = (
            raw_signal
            if isinstance(raw_signal, str) and _SIGNAL.fullmatch(raw_signal) is not None
            else None
        )
        if code is None and signal is None:
            raise CreateosError(EXIT_MISSING)
        return ExitFrame(exit_code=code, signal=signal)
    if kind == "error":
        return ErrorFrame(error=obj.get("error"))
    raise CreateosError(UNKNOWN_EVENT)


def decode_data(frame: DataFrame) -> tuple[StreamName, bytes]:
    """The stream name and raw bytes of a new data frame; anything odd is invalid output."""
    stream = frame.stream
    payload = frame.data_base64
    if stream not in ("stdout", "stderr") or not isinstance(payload, str):
        raise CreateosError(INVALID_OUTPUT)
    if _BASE64.fullmatch(payload) is None:
        raise CreateosError(INVALID_OUTPUT)
    return ("stdout" if stream == "stdout" else "stderr"), base64.b64decode(payload)


def error_for(frame: ErrorFrame) -> CreateosError:
    """The fixed error a server-side stream error becomes."""
    if frame.error == "output_offset_expired":
        return CreateosError(EVICTED)
    return CreateosError(STREAM_ERROR)


class StreamCapture:
    """One stream's incremental decoder plus the bounded tail of its text."""

    def __init__(self, cap: int) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._cap = cap
        self._chunks: deque[str] = deque()
        self._length = 0
        self.truncated = False

    def decode(self, data: bytes, *, final: bool = False) -> str:
        """Decode more bytes (``final`` flushes an incomplete tail as U+FFFD) and keep them."""
        text = self._decoder.decode(data, final)
        if text:
            self._keep(text)
        return text

    def _keep(self, text: str) -> None:
        self._chunks.append(text)
        self._length += len(text)
        if self._length <= self._cap:
            return
        self.truncated = True
        excess = self._length - self._cap
        while excess:
            head = self._chunks[0]
            if len(head) <= excess:
                self._chunks.popleft()
                excess -= len(head)
                self._length -= len(head)
            else:
                self._chunks[0] = head[excess:]
                self._length -= excess
                excess = 0

    @property
    def text(self) -> str:
        joined = "".join(self._chunks)
        self._chunks.clear()
        if joined:
            self._chunks.append(joined)
        return joined


class ProcessOutput:
    """Both streams of one command, and the live log sink they feed."""

    def __init__(self, log: LogSink | None = None, *, cap: int = MAX_CAPTURE_CHARS) -> None:
        self._log = log
        self.stdout = StreamCapture(cap)
        self.stderr = StreamCapture(cap)

    async def append(self, stream: StreamName, data: bytes) -> None:
        """Decode new bytes and hand any whole characters to the log sink at once."""
        capture = self.stdout if stream == "stdout" else self.stderr
        await self._emit(stream, capture.decode(data))

    async def flush(self) -> None:
        """Finish both decoders: an incomplete trailing sequence becomes U+FFFD."""
        await self._emit("stdout", self.stdout.decode(b"", final=True))
        await self._emit("stderr", self.stderr.decode(b"", final=True))

    async def _emit(self, stream: StreamName, text: str) -> None:
        if text and self._log is not None:
            result = self._log(stream, text)
            if inspect.isawaitable(result):
                await result

    @property
    def truncated(self) -> bool:
        return self.stdout.truncated or self.stderr.truncated
