"""``FakeCreateOS.reset()`` between tests: same seed and code give the same ids and journal."""

from __future__ import annotations

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, clock_transport
from fake_server.clock import DEFAULT_EPOCH

pytestmark = pytest.mark.asyncio

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _client(fake: FakeCreateOS) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=fake.url,
        headers={"X-Api-Key": fake.api_key},
        transport=clock_transport(fake.clock),
    )


async def _a_test(fake: FakeCreateOS) -> tuple[list[str], str]:
    """What one test might do: create, run a command that sleeps, look, destroy."""
    async with _client(fake) as client:
        created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
        sandbox_id = created.json()["data"]["id"]
        await client.post(
            f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "bash", "args": ["-c", "sleep 1.5"]}
        )
        process = await client.post(
            f"/v1/sandboxes/{sandbox_id}/processes", json={"cmd": "echo", "args": ["hi"]}
        )
        process_id = process.json()["data"]["process_id"]
        await client.get(f"/v1/sandboxes/{sandbox_id}")
        await client.delete(f"/v1/sandboxes/{sandbox_id}")
    return [fake.api_key, sandbox_id, process_id], fake.journal.format()


async def _serving(clock: VirtualClock) -> FakeCreateOS:
    return await FakeCreateOS(clock=clock, transitions=TransitionPolicy.immediate()).start_async()


async def test_same_seed_after_reset_gives_the_same_ids_and_journal() -> None:
    first = await _serving(VirtualClock())
    second = await _serving(VirtualClock())
    try:
        first.reset(seed=7)
        fresh = await _a_test(first)

        await _a_test(second)  # an earlier test on the same fake, then time passes
        second.clock.advance(1234.567)
        second.reset(seed=7)
        after_others = await _a_test(second)
    finally:
        await first.aclose()
        await second.aclose()

    assert after_others == fresh
    assert fresh[1].splitlines()[0].startswith("     0.000s request    create_sandbox")


async def test_ids_after_reset_carry_times_from_the_epoch() -> None:
    fake = await _serving(VirtualClock())
    try:
        fake.clock.advance(500.0)
        fake.reset(seed=3)
        fake.clock.advance(2.5)
        async with _client(fake) as client:
            created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    finally:
        await fake.aclose()
    ulid = created.json()["data"]["id"].removeprefix("sb-")
    millis = 0
    for char in ulid[:10]:
        millis = millis * 32 + _CROCKFORD.index(char)
    assert millis == int(DEFAULT_EPOCH * 1000) + 2500
    assert fake.seed == 3


async def test_a_different_seed_gives_different_ids() -> None:
    fake = await _serving(VirtualClock())
    try:
        fake.reset(seed=1)
        one = (await _a_test(fake))[0]
        fake.reset(seed=2)
        two = (await _a_test(fake))[0]
    finally:
        await fake.aclose()
    assert all(a != b for a, b in zip(one, two, strict=True))


# What a reset costs in real time is measured in benchmarks/bench_clock.py.


async def test_reset_drops_registered_commands() -> None:
    """A command one test registers is gone in the next: by name, by path and on new disks."""
    fake = await _serving(VirtualClock())
    try:
        fake.commands.register("node", lambda io: io.stdout_buffer.extend(b"v20\n"))
        fake.commands.register("sed", lambda io: 42)  # shadows an image command
        assert await _run(fake, "node; sed") == (42, "v20\n")
        fake.reset()
        assert fake.commands.names() == []
        code, output = await _run(fake, "echo x | sed s/x/y/; node; ls /usr/bin/node")
    finally:
        await fake.aclose()
    assert (code, output) == (2, "y\n")


async def _run(fake: FakeCreateOS, script: str) -> tuple[int, str]:
    async with _client(fake) as client:
        created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
        reply = await client.post(
            f"/v1/sandboxes/{created.json()['data']['id']}/exec",
            json={"cmd": "bash", "args": ["-c", script]},
        )
    result = reply.json()["data"]["result"]
    return result["exit_code"], result["stdout"]
