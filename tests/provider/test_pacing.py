"""Request pacing (spec §6.10): per-URL FIFO, 300 ms apart on the injected clock."""

from __future__ import annotations

import asyncio
import hashlib
from typing import TYPE_CHECKING

import pytest

from fake_server import clock_transport
from pytest_createos.provider import CreateosProvider, Environment, Pacer
from pytest_createos.provider._client import CreateosClient, HttpPool
from pytest_createos.provider._signal import AbortController, OperationCancelled
from tests.provider.conftest import success

if TYPE_CHECKING:
    from aiohttp import web

    from fake_server.clock import VirtualClock
    from pytest_createos.provider._signal import AbortSignal
    from tests.provider.conftest import ScriptedApi

URL = "https://api.test"


async def take_turn(
    pacer: Pacer,
    clock: VirtualClock,
    name: str,
    log: list[tuple[str, float]],
    *,
    url: str = URL,
    signal: AbortSignal | None = None,
) -> None:
    await pacer.wait(url, clock=clock, signal=signal)
    log.append((name, clock.now()))


@pytest.mark.asyncio
async def test_turns_are_300ms_apart_in_arrival_order(clock: VirtualClock) -> None:
    """Concurrent callers start in the order they asked, each 300 ms after the previous."""
    pacer = Pacer()
    log: list[tuple[str, float]] = []
    await asyncio.gather(*(take_turn(pacer, clock, name, log) for name in "abcd"))
    assert [name for name, _ in log] == ["a", "b", "c", "d"]
    assert [at for _, at in log] == pytest.approx([0.0, 0.3, 0.6, 0.9])


@pytest.mark.asyncio
async def test_a_late_caller_does_not_wait(clock: VirtualClock) -> None:
    """Spacing is measured from the previous start: after a long pause nobody waits."""
    pacer = Pacer()
    log: list[tuple[str, float]] = []
    await take_turn(pacer, clock, "a", log)
    await clock.sleep(10)
    await take_turn(pacer, clock, "b", log)
    await clock.sleep(0.1)
    await take_turn(pacer, clock, "c", log)
    assert [at for _, at in log] == pytest.approx([0.0, 10.0, 10.3])


@pytest.mark.asyncio
async def test_queues_are_per_api_url(clock: VirtualClock) -> None:
    """Different API URLs do not wait for each other."""
    pacer = Pacer()
    log: list[tuple[str, float]] = []
    await asyncio.gather(
        take_turn(pacer, clock, "a1", log),
        take_turn(pacer, clock, "b1", log, url="https://other.test"),
        take_turn(pacer, clock, "a2", log),
    )
    ordered = sorted(log)
    assert [name for name, _ in ordered] == ["a1", "a2", "b1"]
    assert [at for _, at in ordered] == pytest.approx([0.0, 0.3, 0.0])


@pytest.mark.asyncio
async def test_caller_aborted_while_queued_rejects_at_once_and_keeps_spacing(
    clock: VirtualClock,
) -> None:
    """An aborted caller stops waiting at once; later turns keep their places and spacing."""
    pacer = Pacer()
    log: list[tuple[str, float]] = []
    controller = AbortController()

    async def abort_later() -> float:
        await clock.sleep(0.1)
        controller.abort()
        return clock.now()

    async def cancelled_turn() -> float:
        with pytest.raises(OperationCancelled):
            await take_turn(pacer, clock, "b", log, signal=controller.signal)
        return clock.now()

    with clock.busy():  # every caller queues before the clock may move
        first = asyncio.ensure_future(take_turn(pacer, clock, "a", log))
        await asyncio.sleep(0)
        second = asyncio.ensure_future(cancelled_turn())
        await asyncio.sleep(0)
        third = asyncio.ensure_future(take_turn(pacer, clock, "c", log))
        aborter = asyncio.ensure_future(abort_later())
        await asyncio.sleep(0)
    aborted_at, rejected_at, *_ = await asyncio.gather(aborter, second, first, third)
    assert rejected_at == pytest.approx(aborted_at) == pytest.approx(0.1)
    assert log == [("a", 0.0), ("c", pytest.approx(0.6))]


@pytest.mark.asyncio
async def test_already_aborted_caller_rejects_without_taking_a_turn(clock: VirtualClock) -> None:
    """A caller whose signal already fired raises its reason and reserves nothing."""
    pacer = Pacer()
    log: list[tuple[str, float]] = []
    controller = AbortController()
    controller.abort()
    await take_turn(pacer, clock, "a", log)
    with pytest.raises(OperationCancelled):
        await take_turn(pacer, clock, "b", log, signal=controller.signal)
    await take_turn(pacer, clock, "c", log)
    assert log == [("a", 0.0), ("c", pytest.approx(0.3))]


@pytest.mark.asyncio
async def test_disabled_pacer_never_waits(clock: VirtualClock) -> None:
    """``Pacer.disabled()`` is the switch tests use against a fake without a rate limit."""
    pacer = Pacer.disabled()
    log: list[tuple[str, float]] = []
    await asyncio.gather(*(take_turn(pacer, clock, name, log) for name in "abc"))
    assert [at for _, at in log] == [0.0, 0.0, 0.0]


def test_negative_interval_is_refused() -> None:
    """A misconfigured pacer fails loudly at construction."""
    with pytest.raises(ValueError, match="interval"):
        Pacer(-1)


@pytest.mark.asyncio
async def test_every_request_takes_a_turn(scripted: ScriptedApi) -> None:
    """Requests of one client reach the server 300 ms apart on the injected clock."""
    arrivals: list[float] = []

    async def handler(request: web.Request) -> web.Response:
        arrivals.append(scripted.clock.now())
        return success({})

    scripted.handler = handler
    pool = HttpPool(clock_transport(scripted.clock))
    client = CreateosClient(
        http=pool.get(scripted.url),
        api_url=scripted.url,
        api_key="k",
        timeout_ms=60_000,
        clock=scripted.clock,
        pacer=Pacer(),
    )
    await asyncio.gather(*(client.request_json("GET", "/sandboxes/sb-1") for _ in range(3)))
    await pool.aclose()
    assert arrivals == pytest.approx([0.0, 0.3, 0.6])


@pytest.mark.asyncio
async def test_queues_are_keyed_by_url_digest(clock: VirtualClock) -> None:
    """The pacer remembers SHA-256 digests of API URLs, never the URLs themselves."""
    pacer = Pacer()
    await pacer.wait(URL, clock=clock)
    assert list(pacer._last_start) == [hashlib.sha256(URL.encode()).hexdigest()]


@pytest.mark.asyncio
async def test_provider_paces_by_default(scripted: ScriptedApi) -> None:
    """Without a pacer argument the provider spaces its requests 300 ms apart."""
    arrivals: list[float] = []

    async def handler(request: web.Request) -> web.Response:
        arrivals.append(scripted.clock.now())
        return success({})

    scripted.handler = handler
    provider = CreateosProvider(clock=scripted.clock)
    env = Environment(
        company_id="c",
        environment_id="e",
        config={"apiUrl": scripted.url, "shape": "s", "apiKey": "k"},
    )
    metadata = {
        "provider": "createos",
        "companyId": "c",
        "environmentId": "e",
        "apiUrl": scripted.url,
    }
    await provider.destroy_lease(env, "sb-1", metadata)
    await provider.destroy_lease(env, "sb-2", metadata)
    await provider.shutdown()
    assert arrivals == pytest.approx([0.0, 0.3])
