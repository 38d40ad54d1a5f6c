"""Same seed + same test code = byte-identical journal: ids, fake timings, which faults fired.

Each run uses a fresh fake and a fresh ``VirtualClock``; the provider drives a full lease
lifecycle (acquire, execute, release with pause, resume, destroy) on that clock while seeded
probabilistic faults delay requests and break output connections.
"""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, clock_transport, tls_context
from fake_server.faults import CutStream, Fault, HttpError, Latency
from pytest_createos.provider import CreateosProvider, Environment, Pacer

pytestmark = pytest.mark.asyncio


def arm(fake: FakeCreateOS) -> None:
    faults = fake.faults
    faults.add(Fault("*", Latency(0.5), probability=0.3))
    faults.add(Fault("connect_process", HttpError(503), probability=0.5, times=2))
    faults.add(Fault("get_sandbox", Latency(2), probability=0.5, name="slow reads"))
    faults.add(Fault("connect_process", CutStream(after_frames=0), probability=0.5, times=1))


def _without(body: str | None, markers: list[str | None]) -> str | None:
    for marker in markers:
        if body is not None and marker:
            body = body.replace(marker, "<marker>")
    return body


async def provider_lifecycle(seed: int) -> tuple[str, list[tuple[object, ...]]]:
    clock = VirtualClock()
    fake = FakeCreateOS(seed=seed, clock=clock, transitions=TransitionPolicy.realistic())
    arm(fake)
    async with fake:
        provider = CreateosProvider(
            clock=clock, pacer=Pacer.disabled(), transport=clock_transport(clock)
        )
        env = Environment(
            company_id="company-a",
            environment_id="env-a",
            config={
                "apiUrl": fake.url,
                "apiKey": fake.api_key,
                "shape": "s-1vcpu-1gb",
                "reuseLease": True,
            },
        )
        lease = await provider.acquire_lease(env, run_id="run-1")
        assert lease.provider_lease_id is not None
        result = await provider.execute(env, lease, "/bin/echo", ["hello"])
        assert (result.exit_code, result.stdout) == (0, "hello\n")
        await provider.release_lease(env, lease.provider_lease_id, lease.metadata)
        resumed = await provider.resume_lease(env, lease.provider_lease_id, lease.metadata)
        assert resumed.provider_lease_id == lease.provider_lease_id
        await provider.destroy_lease(env, lease.provider_lease_id, lease.metadata)
        await provider.shutdown()
        assert fake.errors == []
    clock.close()
    # The provider's lease marker (uploaded, then read back) is a random UUID of its own.
    events = fake.journal.events
    markers = [e.body for e in events if e.operation == "upload_file" and e.kind == "request"]
    events = [dataclasses.replace(e, body=_without(e.body, markers)) for e in events]
    # A process's snapshot (its reply to close_process_stdin) may be taken before or after
    # its first output arrives: the runtime's own thread, not the fake's clock, decides.
    events = [
        dataclasses.replace(e, body=None) if e.kind == "response" and e.process_id else e
        for e in events
    ]
    return fake.journal.format(), [dataclasses.astuple(e) for e in events]


async def test_one_lifecycle_twice_gives_byte_identical_journals() -> None:
    first_text, first_events = await provider_lifecycle(seed=7)
    second_text, second_events = await provider_lifecycle(seed=7)
    assert first_text == second_text
    assert first_events == second_events
    kinds = {event[1] for event in first_events}
    assert {"request", "response", "transition", "fault"} <= kinds
    fired = " ".join(str(e[-1]) for e in first_events if e[1] == "fault")
    # With seed 7 the schedule delays, fails a connect and cuts a stream: not a trivial run.
    assert "Latency" in fired
    assert "HttpError(status=503" in fired
    assert "CutStream" in fired


async def test_another_seed_gives_other_ids_and_firings() -> None:
    seven, _ = await provider_lifecycle(seed=7)
    eight, _ = await provider_lifecycle(seed=8)
    assert seven != eight


async def raw_lifecycle(seed: int) -> list[tuple[object, ...]]:
    """The same promise without the provider: plain HTTP calls in a fixed order."""
    clock = VirtualClock()
    fake = FakeCreateOS(seed=seed, clock=clock, transitions=TransitionPolicy.after_reads(1))
    arm(fake)
    async with fake:
        async with httpx.AsyncClient(
            verify=tls_context(),
            base_url=fake.url + "/v1",
            headers={"X-Api-Key": fake.api_key},
            timeout=10,
        ) as api:
            sandbox_id = (await api.post("/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()[
                "data"
            ]["id"]
            for _ in range(2):
                await api.get(f"/sandboxes/{sandbox_id}")
            await api.post(f"/sandboxes/{sandbox_id}/exec", json={"cmd": "/bin/echo"})
            await api.post(f"/sandboxes/{sandbox_id}/pause")
            for _ in range(3):
                await api.get(f"/sandboxes/{sandbox_id}")
            await api.delete(f"/sandboxes/{sandbox_id}")
        assert fake.errors == []
    clock.close()
    return [dataclasses.astuple(e) for e in fake.journal.events]


async def test_raw_http_calls_are_reproducible_too() -> None:
    assert await raw_lifecycle(3) == await raw_lifecycle(3)
