"""The runtime parity suite (``test_runtime_parity*.py``): one threaded fake per runtime, reset
for each test, and the official SDK's client and a running sandbox on it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from createos import Client
from createos.models import CreateSandboxRequest

from fake_server import FakeCreateOS, TransitionPolicy
from fake_server.runtime.api import RUNTIMES
from tests._helpers import settled
from tests.fake_server._process_runtime import bwrap_descendants

if TYPE_CHECKING:
    from collections.abc import Iterator

    from createos.instance import SandboxInstance


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
