"""Handlers for commands and files: buffered and streamed exec, upload, download."""

from __future__ import annotations

import contextlib

from aiohttp import web

from fake_server.http import wire
from fake_server.http.keys import BACKEND_KEY
from fake_server.http.streams import open_body, open_ndjson
from fake_server.models import PayloadTooLarge
from fake_server.runtime.disk import FILE_LIMIT

__all__ = ["MAX_UPLOAD_BYTES", "download_file", "exec_command", "upload_file"]

#: Largest accepted upload: one file of the sandbox's disk. Bigger bodies are refused from
#: their Content-Length, or as soon as the bytes read pass the limit, never buffered whole.
MAX_UPLOAD_BYTES = FILE_LIMIT
_TOO_LARGE = f"file exceeds the fake sandbox's {FILE_LIMIT}-byte file limit"
CHUNK = 64 * 1024


def _sid(request: web.Request) -> str:
    return request.match_info["sandbox_id"]


async def exec_command(request: web.Request) -> web.StreamResponse:
    spec, stream = wire.parse_exec(await wire.read_json(request), request.query.get("stream"))
    account = request[BACKEND_KEY]
    if not stream:
        result = await account.exec(_sid(request), spec)
        return web.json_response(wire.success(wire.exec_result(result)))
    events = account.exec_stream(_sid(request), spec)
    async with contextlib.aclosing(events):
        response, writer = await open_ndjson(request)
        with contextlib.suppress(ConnectionResetError):
            async for event in events:
                await writer.write_frame(wire.exec_event(event))
    return response


async def upload_file(request: web.Request) -> web.Response:
    path = request.query.get("path", "")
    if (request.content_length or 0) > MAX_UPLOAD_BYTES:
        raise PayloadTooLarge(_TOO_LARGE, field="body")
    body = bytearray()
    async for chunk in request.content.iter_chunked(CHUNK):
        body += chunk
        if len(body) > MAX_UPLOAD_BYTES:
            raise PayloadTooLarge(_TOO_LARGE, field="body")
    target, size = request[BACKEND_KEY].upload_file(_sid(request), path, bytes(body))
    return web.json_response(wire.success({"path": target, "bytes": size}))


async def download_file(request: web.Request) -> web.StreamResponse:
    data = request[BACKEND_KEY].download_file(_sid(request), request.query.get("path", ""))
    response, writer = await open_body(request, len(data))
    with contextlib.suppress(ConnectionResetError):
        for start in range(0, len(data), CHUNK):
            await writer.write(data[start : start + CHUNK])
    return response
