"""Every test here is marked ``reliability`` (fuzz, leaks, capacity, chaos): a plain ``pytest``
leaves them out and CI runs them as their own step (``pytest -m reliability``), so the main
suite stays quick. One threaded fake per fuzz module, and a client holding both its account
and control keys.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
import pytest_asyncio
from createos import Client
from createos.models import CreateSandboxRequest

from fake_server import FakeCreateOS, TransitionPolicy, clock_transport
from fake_server.runtime.api import RUNTIMES
from tests.fake_server._process_runtime import bwrap_descendants
from tests.reliability._helpers import settled

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

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
