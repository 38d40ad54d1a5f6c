"""Managed processes on the wire: create, input and signal requests, the process
projection, its output frames.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from fake_server.http.wire.common import (
    command_fits,
    iso,
    no_nul,
    opt_int,
    str_field,
    str_list,
    str_map,
)
from fake_server.models import (
    BadRequest,
    ExitFrame,
    ExpiredFrame,
    HeartbeatFrame,
    OutputFrame,
    ProcessSpec,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fake_server.models import Frame, Process

__all__ = [
    "PTY_DEFAULT_CMD",
    "parse_input",
    "parse_process",
    "parse_signal",
    "process_frame",
    "process_json",
]


#: What a PTY runs when the create request names no ``cmd`` (the SDK's PTY example sends none).
PTY_DEFAULT_CMD = "/bin/bash"


def parse_process(body: Mapping[str, Any]) -> ProcessSpec:
    pty = body.get("pty")
    cmd = str_field(body, "cmd", required=pty is None) or PTY_DEFAULT_CMD
    args = str_list(body, "args")
    no_nul(cmd, *args)
    size: tuple[int, int] | None = None
    if pty is not None:
        if not isinstance(pty, dict):
            raise BadRequest("must be an object with rows and cols", field="pty")
        rows, cols = opt_int(pty, "rows") or 24, opt_int(pty, "cols") or 80
        size = (rows, cols)
    env = str_map(body, "env")
    command_fits(cmd, args, env)
    return ProcessSpec(cmd=cmd, args=args, cwd=str_field(body, "cwd") or None, env=env, pty=size)


def parse_input(body: Mapping[str, Any]) -> bytes:
    raw = str_field(body, "data_base64", required=False)
    if raw is None:
        raise BadRequest("is required", field="data_base64")
    try:
        return base64.b64decode(raw, validate=True)
    except ValueError:
        raise BadRequest("must be base64", field="data_base64") from None


def parse_signal(body: Mapping[str, Any]) -> str:
    signal = str_field(body, "signal", required=True)
    assert signal is not None
    return signal


def process_json(p: Process) -> dict[str, Any]:
    return {
        "process_id": p.process_id,
        "kind": p.kind,
        "pid": p.pid,
        "state": p.state,
        "leader_exited": p.leader_exited,
        "tree_exited": p.tree_exited,
        "created_at": iso(p.created_at),
        "finished_at": iso(p.finished_at),
        "exit_code": p.exit_code,
        "signal": p.signal,
        "cmd": p.spec.cmd,
        "args": list(p.spec.args),
        "cwd": p.cwd,
        "foreground": None
        if p.tree_exited
        else {"pid": p.pid, "cmd": p.spec.cmd, "args": list(p.spec.args)},
        "output": {
            "oldest_seq": p.output.oldest_seq,
            "newest_seq": p.output.newest_seq,
            "bytes": p.output.bytes,
        },
    }


def process_frame(frame: Frame) -> dict[str, Any]:
    if isinstance(frame, OutputFrame):
        return {
            "type": "data",
            "seq": frame.seq,
            "stream": frame.stream,
            "data_base64": base64.b64encode(frame.data).decode(),
        }
    if isinstance(frame, HeartbeatFrame):
        return {"type": "heartbeat"}
    if isinstance(frame, ExitFrame):
        exit_frame: dict[str, Any] = {"type": "exit"}
        if frame.exit_code is not None:
            exit_frame["exit_code"] = frame.exit_code
        if frame.signal is not None:
            exit_frame["signal"] = frame.signal
        return exit_frame
    if isinstance(frame, ExpiredFrame):
        return {
            "type": "error",
            "error": "output_offset_expired",
            "oldest_available_seq": frame.oldest_available_seq,
        }
    raise TypeError(f"not a process frame: {type(frame).__name__}")
