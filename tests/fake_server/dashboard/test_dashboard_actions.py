"""The dashboard's actions (control-API calls made with its session) and what its journal and
fault pages read: a sandbox paused, resumed, forked and destroyed, the journal cleared, the
fake reset; free-text search, forgiving filters, fired-at times, used-up faults."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest
import pytest_asyncio

from fake_server import Fault, tls_context
from fake_server.faults import HttpError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from fake_server import FakeCreateOS

pytestmark = pytest.mark.asyncio
UI = "/_fake/ui/"


@pytest_asyncio.fixture(name="ui")
async def _ui(fake: FakeCreateOS) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=fake.url, timeout=10, verify=tls_context()) as ui:
        answer = await ui.post(UI + "login", json={"key": fake.control_key})
        ui.headers["X-CSRF-Token"] = answer.json()["csrf"]
        yield ui


async def test_a_sandbox_is_paused_resumed_forked_and_destroyed_from_the_dashboard(
    fake: FakeCreateOS,
    ui: httpx.AsyncClient,
    client: httpx.AsyncClient,
    make_sandbox: Callable[..., Awaitable[str]],
) -> None:
    sandbox_id = await make_sandbox()
    control = UI + f"api/control/sandboxes/{sandbox_id}/"
    paused = await ui.post(control + "pause")
    assert (paused.status_code, paused.json()["data"]["id"]) == (200, sandbox_id)
    assert (await client.get(f"/v1/sandboxes/{sandbox_id}")).json()["data"]["status"] == "paused"
    forked = await ui.post(control + "fork")  # the service forks a paused sandbox only
    assert forked.status_code == 200, forked.text
    child = forked.json()["data"]["id"]
    assert child != sandbox_id
    assert (await client.get(f"/v1/sandboxes/{child}")).status_code == 200
    await ui.post(control + "resume")
    assert (await client.get(f"/v1/sandboxes/{sandbox_id}")).json()["data"]["status"] == "running"
    destroyed = await ui.post(control + "destroy")
    assert destroyed.json()["data"]["id"] == sandbox_id
    gone = await ui.post(UI + "api/control/sandboxes/sb-none/pause")
    assert (gone.status_code, gone.json()["data"]["code"]) == (404, "not_found")
    journaled = [
        (e.method, e.path, e.operation, e.sandbox_id, e.account_id)
        for e in fake.journal.events
        if e.kind == "response" and (e.operation or "").startswith("fake_")
    ]
    account = journaled[0][4]
    assert account is not None
    assert journaled == [
        (
            "POST",
            f"/_fake/sandboxes/{sandbox_id}/{action}",
            f"fake_{action}_sandbox",
            sandbox_id,
            account,
        )
        for action in ("pause", "fork", "resume", "destroy")
    ] + [("POST", "/_fake/sandboxes/sb-none/pause", "fake_pause_sandbox", "sb-none", None)]


async def test_the_control_api_acts_on_a_sandbox_for_its_owner(
    fake: FakeCreateOS, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    sandbox_id = await make_sandbox()
    async with httpx.AsyncClient(base_url=fake.url) as control:
        key = {"X-Fake-Control-Key": fake.control_key}
        refused = await control.post(f"/_fake/sandboxes/{sandbox_id}/pause")
        assert refused.status_code == 401
        paused = await control.post(f"/_fake/sandboxes/{sandbox_id}/pause", headers=key)
        assert paused.json()["data"]["status"] in ("pausing", "paused")
        assert fake.sandbox(sandbox_id).status == "paused"
        before = len(fake.journal) + 1  # this call's request too
        cleared = await control.delete("/_fake/journal", headers=key)
        assert cleared.json() == {"status": "success", "data": {"cleared": before}}
        assert [(e.kind, e.operation) for e in fake.journal.events] == [
            ("response", "fake_clear_journal")
        ]


async def test_reset_and_clear_journal_from_the_dashboard(
    fake: FakeCreateOS, ui: httpx.AsyncClient, make_sandbox: Callable[..., Awaitable[str]]
) -> None:
    await make_sandbox()
    cleared = await ui.delete(UI + "api/control/journal")
    assert cleared.status_code == 200
    assert [e.operation for e in fake.journal.events] == ["fake_clear_journal"]
    assert len(fake.sandboxes()) == 1
    reset = await ui.post(UI + "api/control/reset")
    assert reset.json()["data"] == {"reset": True}
    assert fake.sandboxes() == []
    assert [(e.kind, e.operation) for e in fake.journal.events] == [("response", "fake_reset")]


async def test_free_text_search_and_forgiving_filters(
    fake: FakeCreateOS, ui: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    made = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "name": "web-1"})
    sandbox_id = made.json()["data"]["id"]
    other = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "name": "db"})
    exec_body = {"cmd": "echo", "args": ["needle-in-a-body"]}
    await client.post(f"/v1/sandboxes/{sandbox_id}/exec", json=exec_body)
    await client.get(f"/v1/sandboxes/{other.json()['data']['id']}")

    async def rows(**params: str) -> list[tuple[str | None, str | None]]:
        page = (await ui.get(UI + "api/journal", params=params)).json()
        return [(r["operation"], r["sandbox"]) for r in page["rows"]]

    assert await rows(q="NEEDLE-in") == [("exec", sandbox_id)]  # in a body, any case
    assert await rows(q="needle", sandbox="web-1") == [("exec", sandbox_id)]  # a name
    assert await rows(sandbox=sandbox_id[:8].lower(), operation="exec") == [("exec", sandbox_id)]
    assert await rows(operation="run_command") == [("exec", sandbox_id)]  # the SDK's name
    assert await rows(q=f"/v1/sandboxes/{sandbox_id}/exec") == [("exec", sandbox_id)]
    nothing = (await ui.get(UI + "api/journal", params={"operation": "runcomand_x"})).json()
    assert (nothing["total"], nothing["hint"]) == (
        0,
        "no operation is called like 'runcomand_x'",
    )
    near = (await ui.get(UI + "api/journal", params={"operation": "get_sandboxs"})).json()
    assert near["hint"] == (
        "no operation is called like 'get_sandboxs'; nearest: get_sandbox, "
        "get_sandbox_metrics, list_sandboxes"
    )


async def test_faults_show_when_they_fired_and_used_up_ones_apart(
    fake: FakeCreateOS, ui: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    fake.faults.add(Fault(operation="whoami", action=HttpError(503), times=1))
    fake.faults.add(Fault(operation="list_shapes", action=HttpError(500)))
    assert (await client.get("/v1/whoami")).status_code == 503
    listing = (await ui.get(UI + "api/faults")).json()
    assert [f["operation"] for f in listing["faults"]] == ["list_shapes"]
    assert [(f["operation"], f["fired"]) for f in listing["used_up"]] == [("whoami", 1)]
    (fired,) = listing["fired"]
    assert (fired["operation"], fired["t"]) == ("whoami", 0.0)
    row = (await ui.get(UI + "api/journal", params={"operation": "whoami"})).json()["rows"][0]
    assert row["faults"] == ["fault #1 http_error status=503"]
