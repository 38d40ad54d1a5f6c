"""Handlers for commands and files: buffered and streamed exec, upload, download."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, sandbox_id
from fake_server.http.streams import open_body, stream_ndjson
from fake_server.http.wire.commands import exec_event, exec_result, parse_exec
from fake_server.http.wire.common import read_body, read_json
from fake_server.models import PayloadTooLarge
from fake_server.runtime.environment import FILE_LIMIT

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["MAX_UPLOAD_BYTES", "download_file", "exec_command", "upload_file"]

#: Largest accepted upload: one file of the sandbox's disk. Bigger bodies are refused from
#: their Content-Length, or as soon as the bytes read pass the limit, never buffered whole.
MAX_UPLOAD_BYTES = FILE_LIMIT
_TOO_LARGE = f"file exceeds the fake sandbox's {FILE_LIMIT}-byte file limit"
CHUNK = 64 * 1024


async def exec_command(request: web.Request) -> web.StreamResponse:
    spec, stream = parse_exec(await read_json(request), request.query.get("stream"))
    account = request[BACKEND_KEY]
    if not stream:
        return ok(exec_result(await account.exec(sandbox_id(request), spec)))
    events = account.exec_stream(sandbox_id(request), spec)
    return await stream_ndjson(request, events, exec_event)


async def upload_file(request: web.Request) -> web.Response:
    path = request.query.get("path", "")
    body = await read_body(request, MAX_UPLOAD_BYTES, too_large=_TOO_LARGE, error=PayloadTooLarge)
    target, size = request[BACKEND_KEY].upload_file(sandbox_id(request), path, body)
    return ok({"path": target, "bytes": size})


async def download_file(request: web.Request) -> web.StreamResponse:
    data = request[BACKEND_KEY].download_file(sandbox_id(request), request.query.get("path", ""))
    response, writer = await open_body(request, len(data))
    with contextlib.suppress(ConnectionResetError):
        for start in range(0, len(data), CHUNK):
            await writer.write(data[start : start + CHUNK])
    return response
