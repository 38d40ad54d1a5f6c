"""One way to get a started fake: the ``make_fake`` fixture (``tests/conftest.py`` loads it).

``fake = await make_fake(**options)`` is ``FakeCreateOS(**options)`` served in the test's loop;
the fixture closes every fake it made at teardown, newest first, after checking that none
recorded an error of its own (``errors_ok=True`` for a test that provokes one), and that a
process-runtime fake left no sandbox process behind. A test about starting or closing a fake
builds its own ``FakeCreateOS``; so does a module sharing one threaded fake (``.start()``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import httpx
import pytest_asyncio

from fake_server import FakeCreateOS, clock_transport
from tests.fake_server._process_runtime import no_bwrap_left

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["MakeFake", "api_client", "make_fake"]


class MakeFake(Protocol):
    async def __call__(self, *, errors_ok: bool = False, **options: Any) -> FakeCreateOS: ...


@pytest_asyncio.fixture(name="make_fake")
async def make_fake() -> AsyncIterator[MakeFake]:
    """Start in-loop fakes with any ``FakeCreateOS`` options; all closed at teardown."""
    made: list[tuple[FakeCreateOS, bool]] = []

    async def make(*, errors_ok: bool = False, **options: Any) -> FakeCreateOS:
        fake = FakeCreateOS(**options)
        made.append((fake, errors_ok))
        return await fake.start_async()

    yield make
    errors = [fake.errors for fake, ok in made if not ok and fake.errors]
    for fake, _ in reversed(made):
        await fake.aclose()
    assert not errors, f"errors the fake recorded: {errors}"
    if any(fake.runtime == "process" for fake, _ in made):
        assert await no_bwrap_left()


def api_client(fake: FakeCreateOS, timeout: float = 30) -> httpx.AsyncClient:
    """An httpx client of ``fake``'s default account that reports its requests to the fake's
    clock (so a virtual clock never waits for a stale in-flight reply)."""
    return httpx.AsyncClient(
        base_url=fake.url,
        headers={"X-Api-Key": fake.api_key},
        timeout=timeout,
        transport=clock_transport(fake.clock),
    )
