"""File descriptors and memory stay flat: command runs and sandbox lifecycles free what they
used once they end, and ``reset()`` frees what a test left behind.

The full-size check (2,000 executions, 500 lifecycles, then a timed soak printing RSS and fds)
is ``benchmarks/soak.py``; this is its cheap version for the main suite.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING

import pytest

from tests._fakes import api_client
from tests._helpers import open_fds

if TYPE_CHECKING:
    import httpx

    from fake_server import FakeCreateOS

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(
        not os.path.isdir("/proc/self/fd"), reason="counts open files through /proc (Linux)"
    ),
]

#: Lifecycles (create, several execs, one managed process, destroy or leave for reset()).
LIFECYCLES = 20
EXECS_PER_LIFECYCLE = 4
#: Memory is counted as the interpreter's allocated blocks, not with tracemalloc: on CPython
#: 3.11 tracing crashes the process when a foreign thread (bashkit's workers, calling back into
#: Python) creates its thread state. A leaked sandbox keeps thousands of blocks (its
#: interpreter state, disk, journal); this is slack for caches and interned strings.
BLOCKS_BOUND = 2_000


async def lifecycle(client: httpx.AsyncClient, index: int) -> None:
    """One sandbox's life: create, run commands (buffered and managed), maybe destroy."""
    created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    assert created.status_code == 200, created.text
    sandbox = f"/v1/sandboxes/{created.json()['data']['id']}"
    for step in range(EXECS_PER_LIFECYCLE):
        reply = await client.post(
            sandbox + "/exec",
            json={"cmd": "bash", "args": ["-c", f"echo {index}-{step} >/tmp/f; cat /tmp/f"]},
        )
        assert reply.status_code == 200, reply.text
        assert reply.json()["data"]["result"]["stdout"] == f"{index}-{step}\n"
    process = await client.post(sandbox + "/processes", json={"cmd": "cat"})
    assert process.status_code in (200, 201), process.text
    if index % 2:
        assert (await client.delete(sandbox)).status_code == 200


async def run_lifecycles(fake: FakeCreateOS, client: httpx.AsyncClient, count: int) -> None:
    for index in range(count):
        await lifecycle(client, index)
        fake.reset()
        client.headers["X-Api-Key"] = fake.api_key


@pytest.mark.asyncio
async def test_runs_and_lifecycles_leave_fds_and_memory_flat(fake: FakeCreateOS) -> None:
    async with api_client(fake, timeout=10) as client:
        await run_lifecycles(fake, client, 3)  # warm-up: imports, caches, the client's connection
        gc.collect()
        fds_before = open_fds()
        blocks_before = sys.getallocatedblocks()
        await run_lifecycles(fake, client, LIFECYCLES)
        gc.collect()
        fds_after = open_fds()
        blocks_after = sys.getallocatedblocks()
    runs = LIFECYCLES * (EXECS_PER_LIFECYCLE + 1)
    assert fds_after - fds_before <= 0, f"{fds_after - fds_before} fds leaked over {runs} runs"
    assert blocks_after - blocks_before < BLOCKS_BOUND, (
        f"{blocks_after - blocks_before} memory blocks kept over {LIFECYCLES} lifecycles"
    )
