"""The fuzz modules' shared fake: hypothesis's examples of one module share one threaded fake
and one client holding both the account key and the control key. A module imports both
fixtures; each module gets its own pair (module scope)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["fuzzed_fake", "keyed_client"]


@pytest.fixture(name="fake", scope="module")
def fuzzed_fake() -> Iterator[FakeCreateOS]:
    """One threaded fake for the module: hypothesis's examples share it."""
    fake = FakeCreateOS(transitions=TransitionPolicy.immediate()).start()
    yield fake
    fake.close()


@pytest.fixture(name="http", scope="module")
def keyed_client(fake: FakeCreateOS) -> Iterator[httpx.Client]:
    """A client holding both the account key and the control key."""
    keys = {"X-Api-Key": fake.api_key, "X-Fake-Control-Key": fake.control_key}
    with httpx.Client(base_url=fake.url, headers=keys, timeout=20) as client:
        yield client
