"""Handlers for managed processes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, process_ids, sandbox_id
from fake_server.http.streams.writers import stream_ndjson
from fake_server.http.wire.common import query_int, read_json
from fake_server.http.wire.processes import (
    parse_input,
    parse_process,
    parse_signal,
    process_frame,
    process_json,
)

if TYPE_CHECKING:
    from aiohttp import web

__all__ = [
    "close_process_stdin",
    "connect_process",
    "create_process",
    "get_process",
    "kill_process",
    "list_processes",
    "signal_process",
    "wait_process",
    "write_process_input",
]

DEFAULT_WAIT_MS = 30_000
DEFAULT_GRACE_MS = 1_000


async def create_process(request: web.Request) -> web.Response:
    spec = parse_process(await read_json(request))
    process = request[BACKEND_KEY].processes.create_process(sandbox_id(request), spec)
    return ok(process_json(process), status=201)


async def list_processes(request: web.Request) -> web.Response:
    processes = request[BACKEND_KEY].processes.list_processes(sandbox_id(request))
    return ok({"processes": [process_json(p) for p in processes]})


async def get_process(request: web.Request) -> web.Response:
    return ok(process_json(request[BACKEND_KEY].processes.get_process(*process_ids(request))))


async def connect_process(request: web.Request) -> web.StreamResponse:
    after = query_int(request, "after", 0)
    frames = request[BACKEND_KEY].processes.connect_process(*process_ids(request), after)
    return await stream_ndjson(request, frames, process_frame)


async def write_process_input(request: web.Request) -> web.Response:
    data = parse_input(await read_json(request))
    seq = request[BACKEND_KEY].processes.write_process_input(*process_ids(request), data)
    return ok({"input_seq": seq})


async def close_process_stdin(request: web.Request) -> web.Response:
    await read_json(request, optional=True)
    process = request[BACKEND_KEY].processes.close_process_stdin(*process_ids(request))
    return ok(process_json(process))


async def signal_process(request: web.Request) -> web.Response:
    signal = parse_signal(await read_json(request))
    process = await request[BACKEND_KEY].processes.signal_process(*process_ids(request), signal)
    return ok(process_json(process))


async def wait_process(request: web.Request) -> web.Response:
    process = await request[BACKEND_KEY].processes.wait_process(
        *process_ids(request),
        scope=request.query.get("scope") or "tree",
        timeout_ms=query_int(request, "timeout_ms", DEFAULT_WAIT_MS),
    )
    return ok(process_json(process))


async def kill_process(request: web.Request) -> web.Response:
    grace_ms = query_int(request, "grace_ms", DEFAULT_GRACE_MS)
    process = await request[BACKEND_KEY].processes.kill_process(
        *process_ids(request), grace_ms=grace_ms
    )
    return ok(process_json(process))
