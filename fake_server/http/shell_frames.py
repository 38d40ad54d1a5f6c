"""The frame format of ``GET …/shell-ws``, in one place so it is easy to change.

No public client or document shows the service's format (the TS SDK's ``COMPATIBILITY.md``
names the route only), so this is the fake's own, the common shape of PTY WebSockets:

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

__all__ = ["CLOSE_FLOOD", "CLOSE_IDLE", "CLOSE_NORMAL", "Resize", "decode_text", "exit_frame"]

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
