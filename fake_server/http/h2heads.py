"""The HTTP/1.1 sides of an HTTP/2 stream (``h2stream``): the head its request is written to
aiohttp's parser with, checked for what HTTP/1.1 cannot carry, and the fields and body of an
answer aiohttp wrote in one piece, read without aiohttp's response parser."""

from __future__ import annotations

import re

__all__ = ["HOP", "UNFIT", "Head", "request_head", "whole_answer"]

#: HTTP/1.1 headers that mean nothing in HTTP/2 (RFC 9113 §8.2.2).
HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"}
)
#: ... and of a request: those, the ``te`` field, and ``host`` (the ``:authority`` is written).
_HOP_IN = HOP | {b"te"}
#: What the HTTP/1.1 head written for a stream may hold (``h2front`` leaves the library's
#: checks of inbound fields off, they cost as much as the rest of the request's way in).
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_CONTROL = re.compile(rb"[\x00-\x20\x7f]")
_LINE_BREAK = re.compile(rb"[\x00\r\n]")
#: A request's head as written for aiohttp: the bytes, chunked body, HEAD request.
Head = tuple[bytes, bool, bool]
#: What ``request_head`` answers for a head HTTP/1.1 cannot carry.
UNFIT: Head = (b"", False, False)


def whole_answer(data: bytes) -> tuple[list[tuple[bytes, bytes]], bytes] | None:
    """An answer aiohttp wrote in one piece, with its ``Content-Length``: its HTTP/2 fields and
    its body. ``None`` for any other (in parts, chunked, without a body by its status), which
    aiohttp's own parser reads."""
    end = data.find(b"\r\n\r\n")
    if end < 0 or not data.startswith(b"HTTP/1.1 "):
        return None
    lines = data[:end].split(b"\r\n")
    status = lines[0][9:12]
    if not status.isdigit() or status[:1] == b"1" or status in (b"204", b"304"):
        return None
    head = [(b":status", status)]
    length = -1
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        lower = name.lower()
        if not colon or lower == b"transfer-encoding":
            return None
        value = value.strip(b" \t")
        if lower == b"content-length":
            if length >= 0 or not value.isdigit():
                return None
            length = int(value)
        elif lower in HOP:
            continue
        head.append((lower, value))
    body = data[end + 4 :]
    return (head, body) if len(body) == length else None


def request_head(headers: list[tuple[bytes, bytes]], *, ended: bool) -> Head:
    """The HTTP/1.1 head of a stream's request, whether its body goes chunked (no
    content-length) and whether it is a HEAD; ``UNFIT`` for a head HTTP/1.1 cannot carry (a
    name that is no token, a value with CR, LF or NUL, no method or path)."""
    lines: list[bytes] = []
    values: list[bytes] = []
    cookies: list[bytes] = []
    method = target = authority = b""
    host = b"localhost"
    length = False
    for name, value in headers:
        if name[:1] == b":":
            if name == b":method":
                method = value
            elif name == b":path":
                target = value
            elif name == b":authority":
                authority = value
            continue  # :scheme (and :protocol, which needs a setting never sent)
        if not _TOKEN.match(name):
            return UNFIT
        lower = name.lower()
        if lower == b"host":
            host = value  # :authority, when there is one, comes first
        elif lower == b"cookie":
            cookies.append(value)  # one field again, as HTTP/1.1 has it (RFC 9113 §8.2.3)
            values.append(value)
        elif lower not in _HOP_IN:
            length = length or lower == b"content-length"
            values.append(value)
            lines.append(b"%s: %s\r\n" % (name, value))
    host = authority or host
    if (
        not _TOKEN.match(method)
        or not target
        or _CONTROL.search(target)
        or _CONTROL.search(host)
        or _LINE_BREAK.search(b" ".join(values))
    ):
        return UNFIT
    if cookies:
        lines.append(b"cookie: %s\r\n" % b"; ".join(cookies))
    chunked = not ended and not length
    if chunked:
        lines.append(b"transfer-encoding: chunked\r\n")
    request = b"%s %s HTTP/1.1\r\nhost: %s\r\n" % (method, target, host)
    return request + b"".join(lines) + b"\r\n", chunked, method == b"HEAD"
