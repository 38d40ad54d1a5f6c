"""A large binary upload's sha256 (the journal's summary of it) is worked out on worker threads
as the body arrives (``http.digest``), and reads as if the body had been hashed whole."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
from typing import TYPE_CHECKING

import pytest

from fake_server.http import digest as digests
from fake_server.http import recorder
from fake_server.models.journal import recording

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    import httpx

    from fake_server import FakeCreateOS

pytestmark = pytest.mark.asyncio


async def _upload(client: httpx.AsyncClient, sandbox_id: str, path: str, data: bytes) -> None:
    answer = await client.put(
        f"/v1/sandboxes/{sandbox_id}/files", params={"path": path}, content=data
    )
    assert answer.status_code == 200, answer.text


def _summary(data: bytes) -> str:
    return f"<binary, {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:12]}>"


class _NoWholeHash:
    """``hashlib`` for the journal's summaries, refusing to hash a large body in one go."""

    @staticmethod
    def sha256(data: bytes = b"") -> object:
        assert len(data) < digests.THRESHOLD, "a large body was hashed on the serving loop"
        return hashlib.sha256(data)


async def test_a_large_binary_upload_is_hashed_as_it_arrives(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: Callable[..., Awaitable[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sandbox_id = await make_sandbox()
    monkeypatch.setattr(recording, "hashlib", _NoWholeHash)
    bodies = [os.urandom(digests.THRESHOLD * 3 + 17), b"\xff" + os.urandom(digests.THRESHOLD)]

    await asyncio.gather(
        *(_upload(client, sandbox_id, f"/{number}.bin", data) for number, data in enumerate(bodies))
    )
    for number, data in enumerate(bodies):
        path = f"path=/{number}.bin"
        call = fake.calls.filter("upload_file", where=lambda c, p=path: c.query == p).last
        assert call.request.body == _summary(data)


async def test_a_large_upload_that_starts_as_text_is_hashed_whole(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: Callable[..., Awaitable[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Text at its start (where binary is told apart, once) and a bad byte late: no digest
    was worked out on the way, the summary hashes the body when the journal finds it binary."""
    sandbox_id = await make_sandbox()
    looked: list[int] = []

    def counted(pieces: list[bytes]) -> bool:
        looked.append(len(pieces))
        return recording.may_be_text(pieces)

    monkeypatch.setattr(recorder, "may_be_text", counted)
    data = b"a" * digests.THRESHOLD * 8 + b"\xff"
    await _upload(client, sandbox_id, "/t", data)
    assert fake.calls.filter("upload_file").last.request.body == _summary(data)
    assert len(looked) == 1


async def test_pieces_are_hashed_in_order_while_more_arrive() -> None:
    pieces = [os.urandom(size) for size in (5, 300_000, 1, 70_000, 0, 1_000_000)]
    digest = digests.BodyDigest()
    for piece in pieces:
        digest.add(piece)
        await asyncio.sleep(0)  # the loop turns while a piece may still be hashing
    assert await digest.hexdigest() == hashlib.sha256(b"".join(pieces)).hexdigest()
    assert await digests.BodyDigest().hexdigest() == hashlib.sha256().hexdigest()


async def test_the_digest_waits_for_a_piece_hashed_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A job done before the loop turns (here run in place): its future is done, but not
    yet handed on; waiting on that future would never let the loop turn (a spin, which the
    alarm ends)."""
    loop = asyncio.get_running_loop()

    def in_place(executor: object, function: Callable[..., None], *args: object) -> object:
        done = loop.create_future()
        done.set_result(function(*args))
        return done

    monkeypatch.setattr(loop, "run_in_executor", in_place)
    digest = digests.BodyDigest()
    digest.add(b"first")
    digest.add(b"second")  # waits for the first job's end
    with _alarm(10):
        assert await digest.hexdigest() == hashlib.sha256(b"firstsecond").hexdigest()


@contextlib.contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    """A loop that never turns cannot be timed out from the loop: a signal ends it."""

    def spun(signum: int, frame: object) -> None:
        raise AssertionError(f"still busy after {seconds} s: the loop never turned")

    previous = signal.signal(signal.SIGALRM, spun)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


async def test_without_journal_messages_no_upload_is_hashed(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: Callable[..., Awaitable[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sandbox_id = await make_sandbox()
    fake.journal.messages = False

    def refused() -> None:
        raise AssertionError("an upload was hashed for a journal that keeps no bodies")

    monkeypatch.setattr(recorder, "BodyDigest", refused)
    data = os.urandom(digests.THRESHOLD * 2)
    await _upload(client, sandbox_id, "/q.bin", data)
    assert fake.calls.filter("upload_file").last.request.body is None
