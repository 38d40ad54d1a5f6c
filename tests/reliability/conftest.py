"""Every test here is marked ``reliability`` (fuzz, leaks, capacity, chaos): a plain ``pytest``
leaves them out and CI runs them as their own step (``pytest -m reliability``), so the main
suite stays quick. One threaded fake per fuzz module, and a client holding both its account
and control keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy

if TYPE_CHECKING:
    from collections.abc import Iterator

_HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in item.path.parents:
            item.add_marker(pytest.mark.reliability)


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
