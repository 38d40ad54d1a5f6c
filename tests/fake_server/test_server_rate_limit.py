"""``FakeCreateOS.rate_limit`` can be switched while the fake serves."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, tls_context

if TYPE_CHECKING:
    from tests._fakes import MakeFake

pytestmark = pytest.mark.asyncio


async def _statuses(fake: FakeCreateOS, count: int) -> list[int]:
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
    ) as c:
        return [(await c.get("/v1/sandboxes")).status_code for _ in range(count)]


async def test_rate_limit_switches_on_and_off_while_serving(make_fake: MakeFake) -> None:
    fake = await make_fake(clock=VirtualClock(), transitions=TransitionPolicy.immediate())
    assert await _statuses(fake, 3) == [200, 200, 200]
    fake.rate_limit = 2
    assert await _statuses(fake, 3) == [200, 200, 429]
    fake.rate_limit = None
    assert await _statuses(fake, 3) == [200, 200, 200]


async def test_a_limit_from_the_constructor_is_switchable_and_reset_restores_it(
    make_fake: MakeFake,
) -> None:
    fake = await make_fake(clock=VirtualClock(), rate_limit=1)
    assert await _statuses(fake, 2) == [200, 429]
    fake.rate_limit = 3
    assert await _statuses(fake, 4) == [200, 200, 200, 429]
    fake.reset()
    assert fake.rate_limit == 1
    assert await _statuses(fake, 2) == [200, 429]


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
async def test_bad_rate_limits_are_refused(bad: object) -> None:
    fake = FakeCreateOS(clock=VirtualClock())
    with pytest.raises(ValueError, match="rate_limit must be None"):
        fake.rate_limit = bad  # type: ignore[assignment]
    assert fake.rate_limit is None
