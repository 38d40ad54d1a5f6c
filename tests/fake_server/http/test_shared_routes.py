"""Route tables are built once per process and shared by every fake's app, the dashboard's
live hub listens to the journal from the first dashboard request on, and through both the
answers stay what they were: matched routes, 405 with the allowed methods, 501 naming the
nearest routes, the dashboard's pages."""

from __future__ import annotations

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy
from fake_server.dashboard import UI_PATH, dashboard_table
from fake_server.http.app import api_table, preview_table
from fake_server.http.shared_routes import SharedRoutes

pytestmark = pytest.mark.asyncio


def _tables(fake: FakeCreateOS) -> list[object]:
    runner = fake._runner
    assert runner is not None
    resources = list(runner.app.router.resources())
    assert all(isinstance(resource, SharedRoutes) for resource in resources)
    return [resource._router for resource in resources]  # type: ignore[attr-defined]


async def test_every_fake_resolves_through_the_same_routers_built_once() -> None:
    async with (
        FakeCreateOS(transitions=TransitionPolicy.immediate()) as one,
        FakeCreateOS(transitions=TransitionPolicy.immediate()) as two,
    ):
        assert _tables(one) == [api_table(), dashboard_table()]
        assert all(a is b for a, b in zip(_tables(one), _tables(two), strict=True))
        assert all(table().frozen for table in (api_table, dashboard_table, preview_table))
        async with httpx.AsyncClient(headers={"X-Api-Key": two.api_key}) as http:
            created = await http.post(f"{two.api_url}/sandboxes", json={"shape": "s-1vcpu-1gb"})
            assert created.status_code == 200
            sandbox_id = created.json()["data"]["id"]
            read = await http.get(f"{two.api_url}/sandboxes/{sandbox_id}")
            assert read.json()["data"]["id"] == sandbox_id
            assert len(one.sandboxes()) == 0  # each app still serves its own fake
            refused = await http.put(f"{two.api_url}/sandboxes/{sandbox_id}")
            unknown = await http.get(f"{two.api_url}/sandboxez")
        assert [e.operation for e in two.journal.requests()] == [
            "create_sandbox",
            "get_sandbox",
            "method_not_allowed",
            "not_implemented",
        ]
    assert refused.status_code == 405
    assert refused.headers["Allow"] == "DELETE, GET, PATCH"
    assert refused.json() == {
        "status": "fail",
        "data": {
            "code": "method_not_allowed",
            "message": "method not allowed; allowed: DELETE, GET, PATCH",
        },
    }
    assert unknown.json() == {
        "status": "error",
        "code": 501,
        "message": "this route is not implemented by the CreateOS fake; nearest known routes: "
        "/v1/sandboxes, /v1/sandboxes/by-ip/{ip}, /v1/sandboxes/{sandbox_id}",
        "data": {"code": "not_implemented_by_fake"},
    }


async def test_the_dashboards_hub_listens_from_the_first_dashboard_request_on() -> None:
    async with FakeCreateOS(transitions=TransitionPolicy.immediate()) as fake:
        listeners = fake.journal.listeners
        before = list(listeners)
        async with httpx.AsyncClient() as http:
            await http.get(f"{fake.url}/v1/health")
            assert listeners == before  # API requests: nobody watches, nothing listens
            session = await http.get(f"{fake.url}{UI_PATH}api/session")
            page = await http.get(f"{fake.url}{UI_PATH}")
        assert session.status_code == 200
        assert session.json() == {"logged_in": False}
        assert page.status_code == 200
        assert page.headers["Content-Type"].startswith("text/html")
        assert len(listeners) == len(before) + 1
    assert len(listeners) == len(before)  # the stop let go of it
