"""Every test here is marked ``reliability`` (fuzz, leaks, capacity, chaos): a plain ``pytest``
leaves them out and CI runs them as their own step (``pytest -m reliability``), so the main
suite stays quick. One threaded fake per fuzz module, and a client holding both its account
and control keys.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import pytest_asyncio
from createos import Client
from createos.models import CreateSandboxRequest

from fake_server import FakeCreateOS, TransitionPolicy, clock_transport
from fake_server.runtime.api import RUNTIMES
from tests.fake_server._process_runtime import bwrap_descendants

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

    from createos.instance import SandboxInstance

_HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in item.path.parents:
            item.add_marker(pytest.mark.reliability)


@pytest.fixture(name="cpu_burners", scope="module")
def _cpu_burners() -> Iterator[None]:
    """Two busy processes for a whole module, as on a loaded machine (``pytestmark =
    pytest.mark.usefixtures("cpu_burners")``)."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    yield
    for burner in burners:
        burner.kill()
        burner.wait()


@pytest.fixture(name="fake", scope="module")
def _fake() -> Iterator[FakeCreateOS]:
    fake = FakeCreateOS(transitions=TransitionPolicy.immediate()).start()
    yield fake
    fake.close()


@pytest_asyncio.fixture(name="client")
async def _client(fake: FakeCreateOS) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client of the test's fake on its clock (for modules whose ``fake`` runs in the
    test's loop)."""
    async with httpx.AsyncClient(
        base_url=fake.url,
        headers={"X-Api-Key": fake.api_key},
        timeout=30,
        transport=clock_transport(fake.clock),
    ) as client:
        yield client


@pytest.fixture(name="http", scope="module")
def _http(fake: FakeCreateOS) -> Iterator[httpx.Client]:
    keys = {"X-Api-Key": fake.api_key, "X-Fake-Control-Key": fake.control_key}
    with httpx.Client(base_url=fake.url, headers=keys, timeout=20) as client:
        yield client


# -- the runtime parity suite (test_runtime_parity*.py): one fake per runtime ----------------


@pytest.fixture(name="runtime_fake", scope="module", params=RUNTIMES)
def _runtime_fake(request: pytest.FixtureRequest) -> Iterator[FakeCreateOS]:
    """A threaded fake per runtime; the process one must leave no process or directory."""
    fake = FakeCreateOS(transitions=TransitionPolicy.immediate(), runtime=request.param).start()
    yield fake
    fake.close()
    assert settled(lambda: not bwrap_descendants())


@pytest.fixture(name="rt_fake")
def _rt_fake(runtime_fake: FakeCreateOS) -> Iterator[FakeCreateOS]:
    """The module's fake for this runtime, fresh for this test, with no unexpected error."""
    runtime_fake.reset()
    yield runtime_fake
    assert runtime_fake.errors == []


@pytest.fixture(name="sdk")
def _sdk(rt_fake: FakeCreateOS) -> Iterator[Client]:
    with Client(rt_fake.api_key, base_url=rt_fake.url) as client:
        yield client


@pytest.fixture(name="box")
def _box(sdk: Client) -> SandboxInstance:
    """A running sandbox of the runtime under test."""
    request = CreateSandboxRequest(shape="s-1vcpu-1gb", environment_variables={"GREETING": "hello"})
    sandbox = sdk.create_sandbox(request)
    sandbox.wait_until_running()
    return sandbox


async def until(check: Callable[[], Awaitable[bool]], bound: float = 20.0) -> None:
    """Wait (real time, bounded) until ``check()`` holds: a real program decides when."""
    loop = asyncio.get_running_loop()
    end = loop.time() + bound
    while not await check():
        if loop.time() > end:
            raise AssertionError("condition not reached within the bound")
        await asyncio.sleep(0.01)


async def sh(client: httpx.AsyncClient, sandbox_id: str, script: str) -> dict[str, Any]:
    """``bash -c script`` in the sandbox through the API; its result."""
    done = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "/bin/bash", "args": ["-c", script]}
    )
    assert done.status_code == 200, done.text
    result: dict[str, Any] = done.json()["data"]["result"]
    return result


def settled(predicate: Callable[[], bool], bound: float = 10.0) -> bool:
    """Whether ``predicate()`` holds within ``bound`` real seconds: a real process decides
    when it is reaped or has printed, so the test polls what it waits for (never a duration)."""
    end = time.monotonic() + bound
    while not predicate():
        if time.monotonic() > end:
            return False
        time.sleep(0.005)
    return True


def open_fds() -> int:
    """Descriptors this process holds now (Linux: ``/proc/self/fd``)."""
    return len(os.listdir("/proc/self/fd"))


def bashkit_differs(rt_fake: FakeCreateOS, request: pytest.FixtureRequest, reason: str) -> None:
    """Mark the test a strict xfail on the bashkit runtime: a documented runtime difference."""
    if rt_fake.runtime == "bashkit":
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"difference: {reason}"))
