"""Handlers for commands and files: buffered and streamed exec, upload, download."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from fake_server.http.bodies import body_chunks
from fake_server.http.errors import ok
from fake_server.http.keys import BACKEND_KEY, OPERATION_KEY, sandbox_id
from fake_server.http.recorder import BODY_KEY
from fake_server.http.streams.writers import (
    LARGE_JSON,
    WRITE,
    open_body,
    stream_json,
    stream_ndjson,
)
from fake_server.http.wire.commands import exec_event, exec_result, parse_exec
from fake_server.http.wire.common import read_json, success
from fake_server.runtime.environment import FILE_LIMIT
from fake_server.runtime.files import CHUNK

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["MAX_UPLOAD_BYTES", "download_file", "exec_command", "upload_file"]

#: The most of an upload read before its handler runs, so fault rules (``when=``) and the
#: journal see it whole: one file of the bashkit runtime's disk. A larger body streams on to
#: the sandbox's disk (the process runtime takes any size; bashkit refuses it with 413).
MAX_UPLOAD_BYTES = FILE_LIMIT


async def exec_command(request: web.Request) -> web.StreamResponse:
    spec = parse_exec(await read_json(request))
    account = request[BACKEND_KEY]
    if request[OPERATION_KEY] != "exec_stream":
        result = await account.execs.exec(sandbox_id(request), spec)
        if len(result.stdout) + len(result.stderr) > LARGE_JSON:
            return await stream_json(request, success(exec_result(result)))
        return ok(exec_result(result))
    events = account.execs.exec_stream(sandbox_id(request), spec)
    return await stream_ndjson(request, events, exec_event)


async def upload_file(request: web.Request) -> web.Response:
    """The body goes to the file as it arrives: the fake holds one chunk of it at a time
    (beyond what was read ahead)."""
    path = request.query.get("path", "")
    ahead = request.get(BODY_KEY)
    if isinstance(ahead, Exception):
        raise ahead
    body = body_chunks(request, ahead if isinstance(ahead, bytes) else None)
    target, size = await request[BACKEND_KEY].execs.upload_file(
        sandbox_id(request), path, body, request.content_length
    )
    return ok({"path": target, "bytes": size})


async def download_file(request: web.Request) -> web.StreamResponse:
    """The file from its disk a chunk at a time; one that shrank meanwhile ends its reply
    short and closes the connection (its length was promised)."""
    source = request[BACKEND_KEY].execs.download_file(
        sandbox_id(request), request.query.get("path", "")
    )
    try:
        response, writer = await open_body(request, source.size)
        sent = 0
        with contextlib.suppress(ConnectionResetError):
            while sent < source.size:
                chunk = await source.read(min(CHUNK, source.size - sent))
                if not chunk:
                    response.force_close()
                    break
                for start in range(0, len(chunk), WRITE):  # the connection's pieces
                    await writer.write(chunk[start : start + WRITE])
                sent += len(chunk)
    finally:
        source.close()
    return response
