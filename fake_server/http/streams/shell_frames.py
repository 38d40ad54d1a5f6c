"""The frame formats of the shell routes, in one place so they are easy to change.

``POST …/shell`` (``RawFrames``) follows the official CLI (``createos sandbox shell``,
``cmd/sandbox/shell.go`` in NodeOps-app/createos-cli): the client sends frames of a type byte,
a 4-byte big-endian length and the payload; type 0 is keyboard input, type 1 a resize whose
payload is rows then cols, two big-endian 16-bit integers each; the server sends the PTY's
output unframed. The service's exit report on this route is not public: the fake closes the
connection once the output is flushed.

For ``GET …/shell-ws`` no public client or document shows the service's format (the TS
SDK's ``COMPATIBILITY.md`` names the route only), so this is the fake's own, the common shape
of PTY WebSockets:

* binary frames carry terminal bytes: client to server is keyboard input, server to client
  is the PTY's output;
* text frames carry JSON control messages: the client sends ``{"type": "resize", "rows": R,
  "cols": C}`` (also accepted: text that is not JSON is typed as keyboard input); the server
  sends ``{"type": "exit", "exit_code": N}`` (or ``"signal": "SIGKILL"``) when the shell ends,
  then closes the socket with code 1000 and reason ``exit N``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = [
    "CLOSE_FLOOD",
    "CLOSE_IDLE",
    "CLOSE_NORMAL",
    "RawFrames",
    "Resize",
    "decode_text",
    "exit_frame",
]

CLOSE_NORMAL = 1000
#: Too much input the shell has not read yet (a flood): policy violation.
CLOSE_FLOOD = 1008
#: The client sent nothing for the idle timeout: the shell was ended.
CLOSE_IDLE = 4408


@dataclass(frozen=True, slots=True)
class Resize:
    rows: int
    cols: int


def decode_text(text: str) -> Resize | bytes:
    """A control message, or keyboard input (text that is not a control message)."""
    try:
        message = json.loads(text)
    except ValueError:
        return text.encode()
    if not isinstance(message, dict) or message.get("type") != "resize":
        return text.encode()
    rows, cols = message.get("rows"), message.get("cols")
    if not isinstance(rows, int) or not isinstance(cols, int) or isinstance(rows | cols, bool):
        raise ValueError("resize needs integer rows and cols")
    return Resize(rows, cols)


def exit_frame(exit_code: int | None, signal: str | None) -> tuple[str, str]:
    """The text frame announcing the exit, and the close reason."""
    if signal is not None:
        return json.dumps({"type": "exit", "signal": signal}), f"signal {signal}"
    return json.dumps({"type": "exit", "exit_code": exit_code}), f"exit {exit_code}"


#: ``RawFrames`` types (the CLI's ``ptyFrameData`` and ``ptyFrameResize``).
FRAME_DATA = 0
FRAME_RESIZE = 1
_HEAD = 5


class RawFrames:
    """Decodes ``POST …/shell``'s client frames from the byte stream as it arrives; holds at
    most one frame's bytes. ``ValueError`` names what is wrong with a frame."""

    def __init__(self, max_frame: int) -> None:
        self._max = max_frame
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes | Resize]:
        self._buffer += data
        frames: list[bytes | Resize] = []
        while len(self._buffer) >= _HEAD:
            kind, size = self._buffer[0], int.from_bytes(self._buffer[1:_HEAD], "big")
            if kind not in (FRAME_DATA, FRAME_RESIZE):
                raise ValueError(f"unknown frame type {kind} (0 input, 1 resize)")
            if size > self._max:
                raise ValueError(f"frame of {size} bytes; the limit is {self._max}")
            if len(self._buffer) < _HEAD + size:
                break
            payload = bytes(self._buffer[_HEAD : _HEAD + size])
            del self._buffer[: _HEAD + size]
            if kind == FRAME_DATA:
                if payload:
                    frames.append(payload)
            elif size != 4:
                raise ValueError("a resize frame holds 4 bytes: rows and cols")
            else:
                frames.append(
                    Resize(int.from_bytes(payload[:2], "big"), int.from_bytes(payload[2:], "big"))
                )
        return frames
