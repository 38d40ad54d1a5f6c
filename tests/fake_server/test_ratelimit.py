"""The per-caller rate limit, measured on the fake clock."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest
from aiohttp.test_utils import make_mocked_request

from fake_server import FakeCreateOS
from fake_server.clock import VirtualClock
from fake_server.http.middlewares import caller_of
from fake_server.http.ratelimit import RateLimiter

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def clock() -> Iterator[VirtualClock]:
    clock = VirtualClock(autojump=False)
    yield clock
    clock.close()


def test_the_documented_limit_admits_300_per_minute_then_says_when(clock: VirtualClock) -> None:
    limiter = RateLimiter(clock=clock)
    for i in range(300):
        clock.advance(0.1)
        assert limiter.acquire("a") is None, i
    # The first admission was at t=0.1; it leaves the window at t=60.1.
    assert limiter.acquire("a") == 31  # now t=30.0 -> 30.1 s left, rounded up
    clock.advance(30.0)
    assert limiter.acquire("a") == 1  # 0.1 s left still says 1, never 0
    clock.advance(0.1)
    assert limiter.acquire("a") is None
    assert limiter.acquire("a") == 1


def test_callers_are_limited_independently(clock: VirtualClock) -> None:
    limiter = RateLimiter(2, 10, clock=clock)
    assert [limiter.acquire("a") for _ in range(3)] == [None, None, 10]
    assert limiter.acquire("b") is None
    assert limiter.remaining("a") == 0
    assert limiter.remaining("b") == 1


def test_rejected_requests_do_not_extend_the_wait(clock: VirtualClock) -> None:
    limiter = RateLimiter(1, 5, clock=clock)
    assert limiter.acquire("a") is None
    for _ in range(10):
        clock.advance(0.4)
        limiter.acquire("a")
    clock.advance(1.0)  # t=5.0: the only admitted request expires
    assert limiter.acquire("a") is None


def test_reset_forgets_every_caller(clock: VirtualClock) -> None:
    limiter = RateLimiter(1, 60, clock=clock)
    limiter.acquire("a")
    limiter.reset()
    assert limiter.acquire("a") is None


@pytest.mark.parametrize(
    ("limit", "window", "message"),
    [
        (0, 60, "limit must be an integer >= 1 requests per window (None: off)"),
        (True, 60, "limit must be an integer >= 1 requests per window (None: off)"),
        (10, 0, "window must be a positive number of seconds"),
        (10, float("nan"), "window must be a positive number of seconds"),
    ],
)
def test_bad_settings_are_rejected(
    clock: VirtualClock, limit: int, window: float, message: str
) -> None:
    with pytest.raises(ValueError) as info:
        RateLimiter(limit, window, clock=clock)
    assert str(info.value) == message


def test_callers_are_keyed_by_a_hash_of_the_api_key_never_the_key() -> None:
    keyed = make_mocked_request("GET", "/v1/sandboxes", headers={"X-Api-Key": "cos_secret"})
    other = make_mocked_request("GET", "/v1/sandboxes", headers={"X-Api-Key": "cos_other"})
    anonymous = make_mocked_request("GET", "/healthz")
    assert caller_of(keyed).startswith("key:")
    assert "cos_secret" not in caller_of(keyed)
    assert caller_of(keyed) != caller_of(other)
    assert caller_of(anonymous).startswith("peer:")


@pytest.mark.asyncio
async def test_a_rate_limited_fake_answers_429_with_the_envelope_until_a_slot_frees() -> None:
    clock = VirtualClock(autojump=False)
    async with FakeCreateOS(clock=clock, rate_limit=3) as fake:
        other_key = fake.add_account()
        async with httpx.AsyncClient(base_url=fake.url, timeout=10) as client:
            key = {"X-Api-Key": fake.api_key}
            for _ in range(3):
                assert (await client.get("/v1/whoami", headers=key)).status_code == 200
                clock.advance(10)
            limited = await client.get("/v1/whoami", headers=key)
            assert limited.status_code == 429
            assert limited.headers["Retry-After"] == "30"  # the first slot frees at t=60
            assert limited.json() == {
                "status": "fail",
                "data": {"code": "rate_limited", "message": "rate limit exceeded; retry later"},
            }
            other = await client.get("/v1/whoami", headers={"X-Api-Key": other_key})
            assert other.status_code == 200
            assert (await client.get("/_fake/state", headers=key)).status_code == 200
            clock.advance(30)
            assert (await client.get("/v1/whoami", headers=key)).status_code == 200
        assert fake.errors == []
    clock.close()


def test_rate_limiting_is_off_by_default() -> None:
    assert FakeCreateOS().rate_limit is None
