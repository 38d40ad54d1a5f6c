"""The official Python SDK against an account without credit: every cost-incurring call
raises ``APIError`` with status 402 and the service's message, once (402 is not retried)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from createos.errors import APIError
from createos.models import (
    CreateSandboxRequest,
    DiskConfig,
    DiskCreateRequest,
    ForkSandboxRequest,
    NetworkCreateRequest,
    TemplateCreateRequest,
)

from fake_server.faults import ExhaustCredit, Fault

if TYPE_CHECKING:
    from collections.abc import Callable

    from createos import Client
    from createos.instance import SandboxInstance

    from fake_server import FakeCreateOS

MESSAGE = "insufficient credit; top up the account to continue"


def refused(call: Callable[[], object]) -> APIError:
    with pytest.raises(APIError) as caught:
        call()
    assert caught.value.status_code == 402
    assert caught.value.code == 0  # a ``fail`` envelope carries its code in ``data``
    assert str(caught.value).endswith(f"HTTP 402: code: payment_required; message: {MESSAGE}")
    return caught.value


def test_every_cost_incurring_call_raises_402_once(
    rfake: FakeCreateOS, sdk: Client, running: Callable[..., SandboxInstance]
) -> None:
    sandbox = running()
    sandbox.pause()
    sandbox.wait_until_paused()
    rfake.set_credit(0)
    calls: list[Callable[[], object]] = [
        lambda: sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb")),
        sandbox.resume,
        lambda: sandbox.fork(ForkSandboxRequest()),
        lambda: sandbox.recharge_bandwidth(1024),
        lambda: sdk.networks.create(NetworkCreateRequest(name="n")),
        lambda: sdk.disks.create(DiskCreateRequest(name="d", config=DiskConfig(bucket="b"))),
        lambda: sdk.templates.create(TemplateCreateRequest(name="t", dockerfile="FROM devbox:1\n")),
    ]
    for call in calls:
        refused(call)
    answered = rfake.calls.filter(status=402)
    assert len(answered) == len(calls)  # one request each: the SDK does not retry a 402
    assert [s.id for s in rfake.sandboxes()] == [sandbox.id]
    assert rfake.sandbox(sandbox.id).status == "paused"
    rfake.set_credit(None)
    sandbox.resume()
    sandbox.wait_until_running()
    sandbox.destroy()


def test_credit_running_out_mid_test(rfake: FakeCreateOS, sdk: Client) -> None:
    rfake.faults.add(Fault("create_sandbox", ExhaustCredit(), after=1, times=1))
    first = sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb"))
    error = refused(lambda: sdk.create_sandbox(CreateSandboxRequest(shape="s-1vcpu-1gb")))
    assert error.request_id.startswith("req-")
    assert [s.id for s in rfake.sandboxes()] == [first.id]
    first.destroy()
