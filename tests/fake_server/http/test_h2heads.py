"""The HTTP/2 front's reading of aiohttp's answers (``h2heads.whole_answer``): an answer written in
one piece with its length becomes its HTTP/2 fields and body as aiohttp's own response parser
reads them; any other (chunked, in parts, without a body by its status, two lengths) is left to
that parser."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp.base_protocol import BaseProtocol
from aiohttp.http import HttpResponseParser

from fake_server.http.h2heads import whole_answer

WHOLE = (
    b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json; charset=utf-8\r\n"
    b"Content-Length: 2\r\nConnection: keep-alive\r\nX-Spaced:  a b \r\nX-Empty:\r\n\r\n{}"
)


async def _parsed(data: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """What aiohttp's parser reads from ``data``, as the front's HTTP/2 fields."""
    loop = asyncio.get_running_loop()
    parser = HttpResponseParser(BaseProtocol(loop), loop, 2**16, auto_decompress=False)
    [(message, body)], _, _ = parser.feed_data(data)
    hop = {b"connection", b"keep-alive", b"transfer-encoding"}
    fields = [(b":status", b"%d" % message.code)]
    fields += [(n.lower(), v) for n, v in message.raw_headers if n.lower() not in hop]
    return fields, body.read_nowait()


@pytest.mark.asyncio
async def test_a_whole_answer_reads_as_aiohttp_s_parser_reads_it() -> None:
    assert whole_answer(WHOLE) == await _parsed(WHOLE)
    assert whole_answer(WHOLE) == (
        [
            (b":status", b"404"),
            (b"content-type", b"application/json; charset=utf-8"),
            (b"content-length", b"2"),
            (b"x-spaced", b"a b"),
            (b"x-empty", b""),
        ],
        b"{}",
    )
    empty = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    assert (
        whole_answer(empty)
        == await _parsed(empty)
        == ([(b":status", b"200"), (b"content-length", b"0")], b"")
    )


@pytest.mark.parametrize(
    "answer",
    [
        WHOLE[: WHOLE.index(b"{}")],  # the head alone: its body comes in the next write
        WHOLE[:-1],  # part of the body
        WHOLE + b"{",  # more than its length
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nno length",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n{}",
        b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
    ],
)
def test_any_other_answer_is_left_to_aiohttp_s_parser(answer: bytes) -> None:
    assert whole_answer(answer) is None
