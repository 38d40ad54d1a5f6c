"""Commands (``exec``) on the wire: the request, the buffered result, the NDJSON events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fake_server.http.wire.common import (
    bool_field,
    command_fits,
    no_nul,
    str_field,
    str_list,
    str_map,
)
from fake_server.models import (
    ExecError,
    ExecExit,
    ExecHeartbeat,
    ExecOutput,
    ExecSpec,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fake_server.models import ExecEvent, ExecResult

__all__ = ["exec_event", "exec_result", "parse_exec"]


def parse_exec(body: Mapping[str, Any]) -> ExecSpec:
    """The command; whether it streams the core middleware decided (``exec_stream``), this
    only checks that a ``stream`` field is a boolean."""
    cmd = str_field(body, "cmd", required=True)
    assert cmd is not None
    args = str_list(body, "args")
    stdin = str_field(body, "stdin")
    no_nul(cmd, *args)
    env = str_map(body, "env")
    command_fits(cmd, args, env)
    spec = ExecSpec(cmd=cmd, args=args, stdin=stdin, cwd=str_field(body, "cwd") or None, env=env)
    bool_field(body, "stream")
    return spec


def exec_result(result: ExecResult) -> dict[str, Any]:
    return {
        "result": {
            "exit_code": result.exit_code,
            "stdout": result.stdout,
            "stderr": result.stderr,
            "error": result.error,
        },
        "exec_ms": result.exec_ms,
    }


def exec_event(event: ExecEvent) -> dict[str, Any]:
    if isinstance(event, ExecOutput):
        return {event.stream: event.text}
    if isinstance(event, ExecHeartbeat):
        return {"hb": True}
    if isinstance(event, ExecExit):
        return {"exit_code": event.exit_code}
    if isinstance(event, ExecError):
        return {"error": event.message}
    raise TypeError(f"not an exec event: {type(event).__name__}")
