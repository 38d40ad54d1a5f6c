"""Fixtures for the e2e tests: one thread-mode fake per module (on the runtime a module names
in ``FAKE_RUNTIME``), reset before each test, and the official SDK's client for it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest
from createos import Client
from createos.models import CreateSandboxRequest

from fake_server import FakeCreateOS, TransitionPolicy, tls_context

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from createos.instance import SandboxInstance

    from fake_server.models.account import Account


@pytest.fixture(name="resource_fake", scope="module")
def _resource_fake(request: pytest.FixtureRequest) -> Iterator[FakeCreateOS]:
    """On the runtime the module names in ``FAKE_RUNTIME`` (bashkit if it names none)."""
    runtime: str = getattr(request.module, "FAKE_RUNTIME", "bashkit")
    fake = FakeCreateOS(transitions=TransitionPolicy.immediate(), runtime=runtime).start()
    yield fake
    fake.close()


@pytest.fixture(name="rfake")
def _rfake(resource_fake: FakeCreateOS) -> Iterator[FakeCreateOS]:
    """The module's fake, fresh for this test; no unexpected exception may have happened."""
    resource_fake.reset()
    yield resource_fake
    assert resource_fake.errors == []


@pytest.fixture(name="sdk")
def _sdk(rfake: FakeCreateOS) -> Iterator[Client]:
    # An httpx client on the shared TLS context: the SDK would load the CA bundle per Client.
    with (
        httpx.Client(verify=tls_context()) as http,
        Client(rfake.api_key, base_url=rfake.url, http_client=http) as client,
    ):
        yield client


@pytest.fixture(name="account")
def _account(rfake: FakeCreateOS) -> Account:
    account = rfake.world.account_for_key(rfake.api_key)
    assert account is not None
    return account


@pytest.fixture(name="running")
def _running(sdk: Client) -> Callable[..., SandboxInstance]:
    """Create a sandbox through the SDK and wait until it runs."""

    def make(**fields: object) -> SandboxInstance:
        request = CreateSandboxRequest(**{"shape": "s-1vcpu-1gb", **fields})  # type: ignore[arg-type]
        sandbox = sdk.create_sandbox(request)
        sandbox.wait_until_running()
        return sandbox

    return make
