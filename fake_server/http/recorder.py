"""What the journal keeps of each exchange: the request's body read ahead once, and both
messages' headers and bodies through ``models.journal.recording`` (credentials redacted, capped).

The core middleware reads a request's body before anything else looks at it (up to the
limit its handler would accept), so fault rules can match on it (``when=``) and the journal
can keep it; ``wire.read_body`` then answers from that copy. A read that fails is kept and
raised where the handler reads, so errors surface exactly where they did before.
Streamed replies (NDJSON, downloads) are never buffered: their writers count lines and bytes
in a ``Tally`` and the journal keeps that summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from fake_server.http.bodies import read_some
from fake_server.http.digest import THRESHOLD, BodyDigest
from fake_server.models.journal.recording import (
    binary_summary,
    body_text,
    may_be_text,
    query_text,
    redacted,
)

if TYPE_CHECKING:
    from collections.abc import Collection

    from fake_server.faults import Call
    from fake_server.http.state import AppState
    from fake_server.models.journal.recording import BodyTexts

__all__ = [
    "BODY_KEY",
    "DIGEST_KEY",
    "TALLY_KEY",
    "Tally",
    "read_ahead",
    "request_message",
    "response_message",
    "secrets_of",
]

#: The request body as read ahead (or the exception reading it raised).
BODY_KEY: web.RequestKey[bytes | Exception] = web.RequestKey("fake_server.body")
#: The sha256 of a large binary body read ahead, worked out as it arrived (``digest``).
DIGEST_KEY: web.RequestKey[BodyDigest] = web.RequestKey("fake_server.digest")


@dataclass(slots=True)
class Tally:
    """What a streamed reply sent: bytes and lines, counted as they are written."""

    kind: str
    size: int = 0
    lines: int = 0

    def add(self, data: bytes) -> None:
        self.size += len(data)
        if self.kind == "ndjson":  # a binary body's summary has no lines: not counted
            self.lines += data.count(b"\n")

    def summary(self) -> str:
        if self.kind == "ndjson":
            return f"<ndjson stream, {self.lines} lines, {self.size} bytes>"
        if self.kind == "json":
            return f"<json, {self.size} bytes>"
        return binary_summary(self.size)


TALLY_KEY: web.RequestKey[Tally] = web.RequestKey("fake_server.tally")


async def read_ahead(request: web.Request, limit: int, *, digest: bool = True) -> bytes | None:
    """Read the body (at most ``limit`` + 1 bytes) into ``request[BODY_KEY]``; returns it,
    or ``None`` when it is larger than ``limit`` (then ``BODY_KEY`` holds its start).
    ``digest``: a large binary body is hashed as it arrives, for the journal (``DIGEST_KEY``).

    A body announced larger than ``limit`` is left for the handler to refuse or stream
    unread; a negative ``limit`` reads nothing (the handler streams the body on). A body
    that stalls fails as ``bodies.read_some`` says, raised again where the handler reads.
    """
    if limit < 0 or not request.body_exists:
        return None
    if request.content_length is not None and request.content_length > limit:
        return None
    # The pieces are joined once at the end: growing one buffer copies a large upload
    # several times over.
    chunks: list[bytes] = []
    size = 0
    hashing: BodyDigest | None = None
    undecided = digest  # whether to hash is decided once, from the body's start
    try:
        while chunk := await read_some(request, limit + 1 - size):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                break
            if hashing is not None:
                hashing.add(chunk)
            elif undecided and size >= THRESHOLD:
                undecided = False
                if not may_be_text(chunks):  # a binary upload: the journal keeps its digest
                    hashing = BodyDigest()
                    for piece in chunks:
                        hashing.add(piece)
    except Exception as exc:  # raised again where the handler reads the body
        request[BODY_KEY] = exc
        return None
    body = request[BODY_KEY] = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    # Past the limit it is only the start of the body: the handler refuses or streams it on,
    # and nobody else may mistake the start for the whole.
    if size > limit:
        return None
    if hashing is not None:
        request[DIGEST_KEY] = hashing
    return body


def secrets_of(state: AppState) -> tuple[str, ...]:
    """The fake's own credentials, masked wherever they appear in a recorded text."""
    return (state.control_key, *tuple(state.world.accounts))


async def request_message(
    request: web.Request, call: Call, secrets: Collection[str], *, messages: bool = True
) -> tuple[str, tuple[tuple[str, str], ...], str | None]:
    """The request's query, and (with ``messages``) headers and body as the journal keeps them
    (a large binary body's digest as ``read_ahead`` worked it out)."""
    query = query_text(call.query, secrets) if call.query else ""
    if not messages:
        return query, (), None
    body = None
    if call.body is not None:
        digest = request.get(DIGEST_KEY)
        known = None if digest is None else await digest.hexdigest()
        body = body_text(call.body, secrets=secrets, digest=known)
    return query, redacted(request.headers.items(), secrets), body


def response_message(
    request: web.Request,
    response: web.StreamResponse,
    secrets: tuple[str, ...],
    texts: BodyTexts | None = None,
) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """The reply's headers and body (a summary if it was streamed) as the journal keeps them;
    ``texts`` remembers the text of bodies sent again unchanged."""
    headers = redacted(response.headers.items(), secrets)
    if response.prepared:  # streamed by its handler; a plain reply is sent after the chain
        tally = request.get(TALLY_KEY)
        return headers, None if tally is None else tally.summary()
    if not isinstance(response, web.Response):
        return headers, None
    raw = response.body
    if raw is None:
        return headers, None
    if type(raw) is bytes:
        return headers, body_text(raw, secrets=secrets) if texts is None else texts.text(
            raw, secrets
        )
    if isinstance(raw, bytearray):
        return headers, body_text(bytes(raw), secrets=secrets)
    size = getattr(raw, "size", None)
    return headers, binary_summary(size if isinstance(size, int) else 0)
