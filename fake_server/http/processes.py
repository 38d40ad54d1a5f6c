"""Handlers for managed processes."""

from __future__ import annotations

import contextlib

from aiohttp import web

from fake_server.http import wire
from fake_server.http.keys import BACKEND_KEY
from fake_server.http.streams import open_ndjson

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


def _ids(request: web.Request) -> tuple[str, str]:
    return request.match_info["sandbox_id"], request.match_info["process_id"]


def _ok(data: dict[str, object], status: int = 200) -> web.Response:
    return web.json_response(wire.success(data), status=status)


async def create_process(request: web.Request) -> web.Response:
    spec = wire.parse_process(await wire.read_json(request))
    process = request[BACKEND_KEY].create_process(request.match_info["sandbox_id"], spec)
    return _ok(wire.process_json(process), status=201)


async def list_processes(request: web.Request) -> web.Response:
    processes = request[BACKEND_KEY].list_processes(request.match_info["sandbox_id"])
    return _ok({"processes": [wire.process_json(p) for p in processes]})


async def get_process(request: web.Request) -> web.Response:
    return _ok(wire.process_json(request[BACKEND_KEY].get_process(*_ids(request))))


async def connect_process(request: web.Request) -> web.StreamResponse:
    after = wire.query_int(request, "after", 0)
    frames = request[BACKEND_KEY].connect_process(*_ids(request), after)
    async with contextlib.aclosing(frames):
        response, writer = await open_ndjson(request)
        with contextlib.suppress(ConnectionResetError):
            async for frame in frames:
                await writer.write_frame(wire.process_frame(frame))
    return response


async def write_process_input(request: web.Request) -> web.Response:
    data = wire.parse_input(await wire.read_json(request))
    seq = request[BACKEND_KEY].write_process_input(*_ids(request), data)
    return _ok({"input_seq": seq})


async def close_process_stdin(request: web.Request) -> web.Response:
    await wire.read_json(request, optional=True)
    process = request[BACKEND_KEY].close_process_stdin(*_ids(request))
    return _ok(wire.process_json(process))


async def signal_process(request: web.Request) -> web.Response:
    signal = wire.parse_signal(await wire.read_json(request))
    process = await request[BACKEND_KEY].signal_process(*_ids(request), signal)
    return _ok(wire.process_json(process))


async def wait_process(request: web.Request) -> web.Response:
    process = await request[BACKEND_KEY].wait_process(
        *_ids(request),
        scope=request.query.get("scope") or "tree",
        timeout_ms=wire.query_int(request, "timeout_ms", DEFAULT_WAIT_MS),
    )
    return _ok(wire.process_json(process))


async def kill_process(request: web.Request) -> web.Response:
    grace_ms = wire.query_int(request, "grace_ms", DEFAULT_GRACE_MS)
    process = await request[BACKEND_KEY].kill_process(*_ids(request), grace_ms=grace_ms)
    return _ok(wire.process_json(process))
