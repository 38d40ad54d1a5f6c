"""The fault tests' client: the account key and the control key, on the fake's origin (a
module with other needs, such as the stream faults' ``/v1`` client, defines its own ``api``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest_asyncio

from fake_server import tls_context

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from fake_server import FakeCreateOS


@pytest_asyncio.fixture(name="api")
async def _api(faulty: FakeCreateOS) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        verify=tls_context(),
        base_url=faulty.url,
        headers={"X-Api-Key": faulty.api_key, "X-Fake-Control-Key": faulty.control_key},
        timeout=10,
    ) as client:
        yield client
