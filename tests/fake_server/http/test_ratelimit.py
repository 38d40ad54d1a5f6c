"""The per-caller rate limit, measured on the fake clock."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import FakeCreateOS, tls_context
from fake_server.clock import VirtualClock
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


@pytest.mark.asyncio
async def test_every_way_of_sending_a_key_counts_against_the_same_account() -> None:
    clock = VirtualClock(autojump=False)
    async with FakeCreateOS(clock=clock, rate_limit=3) as fake:
        ways = [
            f"X-Api-Key: {fake.api_key}",
            f"X-Api-Key: {fake.api_key}\t ",
            f"X-Auth-Token: {fake.api_key}",
        ]
        statuses = [await _raw_status(fake, header) for header in ways + ways]
    assert statuses == [200, 200, 200, 429, 429, 429]
    assert fake._limiter.callers() == 1


async def _raw_status(fake: FakeCreateOS, header: str) -> int:
    """One request with ``header`` exactly as written (httpx refuses trailing whitespace)."""
    reader, writer = await asyncio.open_connection(fake.host, fake.port)
    try:
        request = f"GET /v1/whoami HTTP/1.1\r\nHost: x\r\n{header}\r\nConnection: close\r\n\r\n"
        writer.write(request.encode())
        await writer.drain()
        status_line = await reader.readline()
        await reader.read()
        return int(status_line.split()[1])
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.mark.asyncio
async def test_bogus_keys_get_401_and_leave_nothing_in_the_limiter() -> None:
    clock = VirtualClock(autojump=False)
    async with FakeCreateOS(clock=clock, rate_limit=3) as fake:
        async with httpx.AsyncClient(verify=tls_context(), base_url=fake.url, timeout=10) as client:
            for n in range(200):
                answer = await client.get("/v1/whoami", headers={"X-Api-Key": f"cos_bogus_{n}"})
                assert answer.status_code == 401
            assert (await client.get("/healthz")).status_code == 200
    assert fake._limiter.callers() == 1  # the peer of the open route, nothing per bogus key


def test_idle_callers_are_forgotten_so_memory_stays_bounded(clock: VirtualClock) -> None:
    limiter = RateLimiter(5, 60, clock=clock)
    for n in range(1000):
        assert limiter.acquire(f"account:{n}") is None
        clock.advance(1)
    assert limiter.callers() <= 2 * 64 + 60
    assert limiter.remaining("account:999") == 4


@pytest.mark.asyncio
async def test_a_rate_limited_fake_answers_429_with_the_envelope_until_a_slot_frees() -> None:
    clock = VirtualClock(autojump=False)
    async with FakeCreateOS(clock=clock, rate_limit=3) as fake:
        other_key = fake.add_account()
        async with httpx.AsyncClient(verify=tls_context(), base_url=fake.url, timeout=10) as client:
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
            control = {"X-Fake-Control-Key": fake.control_key}
            assert (await client.get("/_fake/state", headers=control)).status_code == 200
            clock.advance(30)
            assert (await client.get("/v1/whoami", headers=key)).status_code == 200
        assert fake.errors == []
    clock.close()


def test_rate_limiting_is_off_by_default() -> None:
    assert FakeCreateOS().rate_limit is None
