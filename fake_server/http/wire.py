"""The wire contract of the sandbox, command and process routes: request parsing into typed
specs, models into JSON, NDJSON frames.

The other resource families keep their serialisers beside their handlers, one module per
family: ``resources_networks`` (``network_json``), ``resources_disks`` (``disk_json``,
``attachment_json``), ``resources_templates`` (``template_json``), ``resources_computer``
(``window_json``, ``geometry_json``, ``screen_json``), ``metrics`` (``metrics_json``,
``point_json``); the control API's fault listing is in ``fault_control``. A new family's JSON
goes in its own module the same way (docs/contributing.md).
"""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fake_server.http.recorder import BODY_KEY
from fake_server.models import (
    ApiError,
    BadRequest,
    ExecError,
    ExecExit,
    ExecHeartbeat,
    ExecOutput,
    ExecSpec,
    ExitFrame,
    ExpiredFrame,
    HeartbeatFrame,
    OutputFrame,
    ProcessSpec,
    SandboxSpec,
)
from fake_server.runtime import HOME

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aiohttp import web

    from fake_server.models import ExecEvent, ExecResult, Frame, Page, Process, Sandbox, Stats

__all__ = [
    "PTY_DEFAULT_CMD",
    "decode_json",
    "exec_event",
    "exec_result",
    "iso",
    "parse_create_sandbox",
    "parse_exec",
    "parse_process",
    "process_frame",
    "process_json",
    "query_int",
    "read_body",
    "read_json",
    "sandbox_json",
    "success",
]

MAX_JSON_BYTES = 8 * 1024 * 1024
_INT = re.compile(r"^[0-9]{1,15}$")


def success(data: Mapping[str, Any]) -> dict[str, Any]:
    return {"status": "success", "data": dict(data)}


def iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- request parsing ------------------------------------------------------------------------


async def read_body(
    request: web.Request, limit: int, *, too_large: str, error: type[ApiError] = BadRequest
) -> bytes:
    """The whole body, refused (``error(too_large)``, field ``body``) past ``limit`` bytes.

    The core middleware has usually read it already (``recorder.read_ahead``); otherwise read
    until the end: one ``read(n)`` returns only what has arrived, which is part of a body sent
    in more than one TCP segment.
    """
    if request.content_length is not None and request.content_length > limit:
        raise error(too_large, field="body")
    ahead = request.get(BODY_KEY)
    if isinstance(ahead, Exception):
        raise ahead
    if isinstance(ahead, bytes):
        if len(ahead) > limit:
            raise error(too_large, field="body")
        return ahead
    raw = bytearray()
    while chunk := await request.content.read(limit + 1 - len(raw)):
        raw += chunk
        if len(raw) > limit:
            raise error(too_large, field="body")
    return bytes(raw)


def decode_json(raw: bytes, *, invalid: str = "is not valid JSON") -> object:
    """Any JSON value; lone surrogates (which ``json.loads`` lets through and nothing
    downstream can encode) are refused too."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise BadRequest(invalid, field="body") from None
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except (UnicodeEncodeError, RecursionError, ValueError):
        raise BadRequest("must be valid UTF-8 JSON", field="body") from None
    return value


async def read_json(request: web.Request, *, optional: bool = False) -> dict[str, Any]:
    """The body as a JSON object; an empty body is ``{}`` when ``optional``."""
    raw = await read_body(request, MAX_JSON_BYTES, too_large="is too large")
    if not raw.strip():
        if optional:
            return {}
        raise BadRequest("must be a JSON object", field="body")
    body = decode_json(raw)
    if not isinstance(body, dict):
        raise BadRequest("must be a JSON object", field="body")
    return body


def query_int(request: web.Request, name: str, default: int) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    if not _INT.match(raw):
        raise BadRequest("must be a non-negative integer", field=name)
    return int(raw)


def _str(body: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = body.get(name)
    if value is None:
        if required:
            raise BadRequest("is required", field=name)
        return None
    if not isinstance(value, str):
        raise BadRequest("must be a string", field=name)
    if required and not value:
        raise BadRequest("is required", field=name)
    return value


def _str_list(body: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = body.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequest("must be a list of strings", field=name)
    return tuple(value)


def _str_map(body: Mapping[str, Any], name: str) -> tuple[tuple[str, str], ...]:
    value = body.get(name)
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise BadRequest("must be an object of string values", field=name)
    return tuple(value.items())


def _bool(body: Mapping[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise BadRequest("must be a boolean", field=name)
    return value


def _int(body: Mapping[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**53:
        raise BadRequest("must be a non-negative integer", field=name)
    return value


def _no_nul(*values: str | None) -> None:
    for value in values:
        if value is not None and "\x00" in value:
            raise BadRequest("must not contain NUL", field="cmd")


def parse_create_sandbox(body: Mapping[str, Any]) -> SandboxSpec:
    shape = _str(body, "shape", required=True)
    assert shape is not None  # narrowed by required=True
    extras: dict[str, Any] = {
        "egress": list(_str_list(body, "egress")),
        "ssh_pubkeys": list(_str_list(body, "ssh_pubkeys")),
        "networks": body.get("networks") if isinstance(body.get("networks"), list) else [],
        "disk_mib": _int(body, "disk_mib"),
        "auto_pause_after_seconds": _int(body, "auto_pause_after_seconds"),
        # Checked against the account's networks, disks and hosts (``models.resources``).
        "networks_raw": body.get("networks"),
        "disks_raw": body.get("disks"),
        "host_id": body.get("host_id"),
        "node_selector": body.get("node_selector"),
    }
    return SandboxSpec(
        shape=shape,
        rootfs=_str(body, "rootfs") or "",
        region=_str(body, "region") or "",
        name=_str(body, "name"),
        ingress_enabled=_bool(body, "ingress_enabled"),
        envs=_str_map(body, "envs"),
        extras=extras,
    )


def parse_exec(body: Mapping[str, Any], query_stream: str | None) -> tuple[ExecSpec, bool]:
    """The command and whether to stream (``?stream=true`` or body ``stream: true``)."""
    cmd = _str(body, "cmd", required=True)
    assert cmd is not None
    args = _str_list(body, "args")
    stdin = _str(body, "stdin")
    _no_nul(cmd, *args)
    spec = ExecSpec(
        cmd=cmd, args=args, stdin=stdin, cwd=_str(body, "cwd") or None, env=_str_map(body, "env")
    )
    stream = _bool(body, "stream") or (query_stream or "").lower() in ("true", "1")
    return spec, stream


#: What a PTY runs when the create request names no ``cmd`` (the SDK's PTY example sends none).
PTY_DEFAULT_CMD = "/bin/bash"


def parse_process(body: Mapping[str, Any]) -> ProcessSpec:
    pty = body.get("pty")
    cmd = _str(body, "cmd", required=pty is None) or PTY_DEFAULT_CMD
    args = _str_list(body, "args")
    _no_nul(cmd, *args)
    size: tuple[int, int] | None = None
    if pty is not None:
        if not isinstance(pty, dict):
            raise BadRequest("must be an object with rows and cols", field="pty")
        rows, cols = _int(pty, "rows") or 24, _int(pty, "cols") or 80
        size = (rows, cols)
    return ProcessSpec(
        cmd=cmd, args=args, cwd=_str(body, "cwd") or None, env=_str_map(body, "env"), pty=size
    )


def parse_input(body: Mapping[str, Any]) -> bytes:
    raw = _str(body, "data_base64", required=False)
    if raw is None:
        raise BadRequest("is required", field="data_base64")
    try:
        return base64.b64decode(raw, validate=True)
    except ValueError:
        raise BadRequest("must be base64", field="data_base64") from None


def parse_signal(body: Mapping[str, Any]) -> str:
    signal = _str(body, "signal", required=True)
    assert signal is not None
    return signal


#: Field parsers shared with the handler modules of later routes.
str_list = _str_list
str_map = _str_map
opt_int = _int


# -- responses ------------------------------------------------------------------------------


#: Where a sandbox's preview URLs live on the fake: ``{origin}/_ingress/{id}/{port}/``.
INGRESS_PREFIX = "/_ingress"


def ingress_url_template(origin: str, sandbox_id: str) -> str:
    """The template with the literal ``<port>`` placeholder both SDKs substitute."""
    return f"{origin}{INGRESS_PREFIX}/{sandbox_id}/<port>/"


def sandbox_json(s: Sandbox, origin: str = "") -> dict[str, Any]:
    """The service's projection: optional fields absent when unset (``omitempty``), never
    ``null``; ``origin`` (the fake's URL) makes the ingress template when ingress is on."""
    data: dict[str, Any] = {
        "id": s.id,
        "status": s.status,
        "name": s.name,
        "ip": s.ip,
        "shape": s.shape.id,
        "rootfs": s.spec.rootfs,
        "region": s.spec.region,
        "vcpu": s.shape.vcpu,
        "mem_mib": s.shape.mem_mib,
        "disk_mib": s.disk_mib,
        "spawn_ms": s.spawn_ms,
        "egress": list(s.egress),
        "created_at": iso(s.created_at),
        "ingress_enabled": s.ingress_enabled,
        "envs": sorted(s.envs),
        "ssh_pubkeys": list(s.ssh_pubkeys),
        "created_by": s.account_id,
        "bandwidth_quota_bytes": s.bandwidth.quota_bytes,
        "bandwidth_ingress_bytes": s.bandwidth.ingress_bytes,
    }
    optional = {
        "running_at": iso(s.running_at),
        "paused_at": iso(s.paused_at),
        "last_resumed_at": iso(s.last_resumed_at),
        "destroyed_at": iso(s.destroyed_at),
        "auto_pause_after_seconds": s.auto_pause_after_seconds,
        "forked_from": s.forked_from,
        "ingress_url_template": ingress_url_template(origin, s.id)
        if s.ingress_enabled and origin
        else None,
    }
    data.update((key, value) for key, value in optional.items() if value is not None)
    return data


def sandbox_page(page: Page, origin: str = "") -> dict[str, Any]:
    return {
        "data": [sandbox_json(s, origin) for s in page.items],
        "pagination": {
            "total": page.total,
            "limit": page.limit,
            "offset": page.offset,
            "count": len(page.items),
        },
    }


def stats_json(user_id: str, stats: Stats) -> dict[str, Any]:
    return {
        "user_id": user_id,
        "stats": {
            "running": stats.running,
            "paused": stats.paused,
            "other": stats.other,
            "total": stats.total,
        },
    }


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
        "cwd": p.spec.cwd or HOME,
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
