"""One threaded fake per fuzz module, and a client holding both its account and control keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(name="fake", scope="module")
def _fake() -> Iterator[FakeCreateOS]:
    fake = FakeCreateOS(transitions=TransitionPolicy.immediate()).start()
    yield fake
    fake.close()


@pytest.fixture(name="http", scope="module")
def _http(fake: FakeCreateOS) -> Iterator[httpx.Client]:
    keys = {"X-Api-Key": fake.api_key, "X-Fake-Control-Key": fake.control_key}
    with httpx.Client(base_url=fake.url, headers=keys, timeout=20) as client:
        yield client
