"""Sandbox lifecycle over HTTP: create, list, get, pause, resume, delete, auth and accounts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock, tls_context

if TYPE_CHECKING:
    from tests._fakes import MakeFake

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]


def fail(field: str, message: str) -> dict[str, object]:
    return {"status": "fail", "data": {field: message}}


async def test_create_returns_creating_projection_then_running(
    client: httpx.AsyncClient,
) -> None:
    """The create reply is the full projection in ``creating``; the next GET is running."""
    response = await client.post(
        "/v1/sandboxes",
        json={
            "shape": "s-2vcpu-4gb",
            "rootfs": "node:22",
            "region": "us",
            "name": "my-box",
            "ingress_enabled": True,
            "envs": {"TOKEN": "secret", "MODE": "ci"},
            "egress": ["example.com"],
            "auto_pause_after_seconds": 600,
            "networks": [],
        },
    )
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["id"].startswith("sb-")
    assert len(data["id"]) == 29
    assert {k: data[k] for k in ("status", "name", "shape", "rootfs", "region")} == {
        "status": "running",
        "name": "my-box",
        "shape": "s-2vcpu-4gb",
        "rootfs": "node:22",
        "region": "us",
    }
    assert (data["vcpu"], data["mem_mib"], data["disk_mib"]) == (2, 4096, 10240)
    assert data["envs"] == ["MODE", "TOKEN"]
    assert data["egress"] == ["example.com"]
    assert data["ingress_enabled"] is True
    assert data["ip"].startswith("10.")
    assert data["created_at"] == "2026-01-01T00:00:00.000Z"
    again = await client.get(f"/v1/sandboxes/{data['id']}")
    assert again.json()["data"]["status"] == "running"


async def test_create_defaults_rootfs_and_region(client: httpx.AsyncClient) -> None:
    data = (await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()["data"]
    assert (data["rootfs"], data["region"]) == ("devbox:1", "eu")


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({}, "shape", "is required"),
        ({"shape": "s-99vcpu"}, "shape", "unknown shape"),
        ({"shape": 3}, "shape", "must be a string"),
        ({"shape": "s-1vcpu-1gb", "rootfs": "arch:1"}, "rootfs", "unknown rootfs"),
        ({"shape": "s-1vcpu-1gb", "region": "mars"}, "region", "unknown region"),
        (
            {"shape": "s-1vcpu-1gb", "ingress_enabled": "yes"},
            "ingress_enabled",
            "must be a boolean",
        ),
        ({"shape": "s-1vcpu-1gb", "envs": ["A"]}, "envs", "must be an object of string values"),
        (
            {"shape": "s-1vcpu-1gb", "envs": {"1BAD": "x"}},
            "envs",
            "keys must match ^[A-Za-z_][A-Za-z0-9_]*$",
        ),
        (
            {"shape": "s-1vcpu-1gb", "envs": {f"K{i}": "v" for i in range(65)}},
            "envs",
            "at most 64 entries",
        ),
        (
            {"shape": "s-1vcpu-1gb", "envs": {"BIG": "x" * 4097}},
            "envs",
            "values must be at most 4096 bytes",
        ),
        (
            {"shape": "s-1vcpu-1gb", "envs": {f"K{i}": "x" * 4000 for i in range(17)}},
            "envs",
            "must be at most 65536 bytes in total",
        ),
        ({"shape": "s-1vcpu-1gb", "egress": "all"}, "egress", "must be a list of strings"),
        # bounded as a resize is (a disk of 90 EiB was accepted, and df showed 11E)
        ({"shape": "s-1vcpu-1gb", "disk_mib": 1048577}, "disk_mib", "must be at most 1048576"),
    ],
)
async def test_create_rejects_bad_fields(
    client: httpx.AsyncClient, body: dict[str, object], field: str, message: str
) -> None:
    response = await client.post("/v1/sandboxes", json=body)
    assert response.status_code == 400
    assert response.json() == fail(field, message)


async def test_envs_at_the_limits_are_accepted(client: httpx.AsyncClient) -> None:
    envs = {f"K{i}": "x" * 900 for i in range(64)}
    envs["K0"] = "y" * 4096
    response = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "envs": envs})
    assert response.status_code == 200


async def test_missing_or_wrong_key_is_401_naming_the_accepted_headers(
    fake: FakeCreateOS,
) -> None:
    async with httpx.AsyncClient(verify=tls_context(), base_url=fake.url) as anonymous:
        missing = await anonymous.get("/v1/sandboxes")
        wrong = await anonymous.get("/v1/sandboxes", headers={"X-Api-Key": "cos_live_nope"})
        # The real API takes the key in X-Api-Key (or X-Auth-Token / X-Access-Token) only.
        bearer = await anonymous.get(
            "/v1/sandboxes", headers={"Authorization": f"Bearer {fake.api_key}"}
        )
    expected = {
        "status": "fail",
        "data": {
            "code": "unauthorized",
            "message": "missing or invalid API key; send it in the X-Api-Key header "
            "(X-Auth-Token and X-Access-Token work too; Authorization: Bearer does not)",
        },
    }
    assert (missing.status_code, missing.json()) == (401, expected)
    assert (wrong.status_code, wrong.json()) == (401, expected)
    assert (bearer.status_code, bearer.json()) == (401, expected)
    assert fake.api_key not in bearer.text


async def test_health_readiness_and_catalog_need_no_key(fake: FakeCreateOS) -> None:
    async with httpx.AsyncClient(verify=tls_context(), base_url=fake.url) as anonymous:
        health = await anonymous.get("/healthz")
        ready = await anonymous.get("/readyz")
        shapes = await anonymous.get("/v1/shapes")
        rootfs = await anonymous.get("/v1/rootfs")
    assert health.json() == {"status": "success", "data": {"up": True}}
    assert ready.json()["data"] == {"ready": True, "reason": "", "scheduler_last_ok_ms_ago": 0}
    ids = [s["id"] for s in shapes.json()["data"]["data"]]
    assert len(ids) == 11
    assert "s-0.25vcpu-512mb" in ids
    quarter = next(s for s in shapes.json()["data"]["data"] if s["id"] == "s-0.25vcpu-512mb")
    assert quarter == {
        "id": "s-0.25vcpu-512mb",
        "vcpu": 1,
        "mem_mib": 512,
        "default_disk_mib": 10240,
        "cpu_quota_pct": 25,
    }
    data = rootfs.json()["data"]
    assert data["default"] == "devbox:1"
    assert data["rootfs"] == ["devbox:1", "desktop:1", "ubuntu:24.04", "node:22", "python:3.12"]
    assert data["entries"][0] == {
        "name": "devbox:1",
        "description": "Ubuntu 24.04 with common developer tools",
        "deprecated": False,
    }  # no successor: absent, not null


async def test_other_accounts_sandbox_is_404(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    other_key = fake.add_account()
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": other_key}
    ) as other:
        response = await other.get(f"/v1/sandboxes/{sandbox_id}")
        deleted = await other.delete(f"/v1/sandboxes/{sandbox_id}")
        listed = await other.get("/v1/sandboxes")
    not_found = {
        "status": "fail",
        "data": {"code": "sandbox_not_found", "message": "sandbox not found"},
    }
    assert (response.status_code, response.json()) == (404, not_found)
    assert deleted.status_code == 404
    assert listed.json()["data"]["data"] == []
    assert (await client.get(f"/v1/sandboxes/{sandbox_id}")).status_code == 200


async def test_whoami_counts_sandboxes(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    first = await make_sandbox()
    await make_sandbox()
    await client.post(f"/v1/sandboxes/{first}/pause")
    data = (await client.get("/v1/whoami")).json()["data"]
    assert data["user_id"].startswith("usr-")
    assert data["stats"] == {"running": 1, "paused": 1, "other": 0, "total": 2}


async def test_pagination_and_status_filter(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    ids = [await make_sandbox() for _ in range(5)]
    await client.post(f"/v1/sandboxes/{ids[0]}/pause")
    page = (await client.get("/v1/sandboxes", params={"limit": 2, "offset": 1})).json()["data"]
    assert [s["id"] for s in page["data"]] == ids[1:3]
    assert page["pagination"] == {"total": 5, "limit": 2, "offset": 1, "count": 2}
    default = (await client.get("/v1/sandboxes")).json()["data"]["pagination"]
    assert default == {"total": 5, "limit": 50, "offset": 0, "count": 5}
    paused = (await client.get("/v1/sandboxes", params={"status": "paused"})).json()["data"]
    assert [s["id"] for s in paused["data"]] == [ids[0]]


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"limit": "0"}, "limit", "must be at least 1"),
        ({"limit": "abc"}, "limit", "must be a non-negative integer"),
        ({"offset": "-1"}, "offset", "must be a non-negative integer"),
        ({"status": "sleepy"}, "status", "unknown status"),
    ],
)
async def test_bad_list_parameters_are_400(
    client: httpx.AsyncClient, params: dict[str, str], field: str, message: str
) -> None:
    response = await client.get("/v1/sandboxes", params=params)
    assert (response.status_code, response.json()) == (400, fail(field, message))


async def test_pause_and_resume_follow_the_state_machine(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    base = f"/v1/sandboxes/{sandbox_id}"
    resumed_running = await client.post(base + "/resume")
    assert (resumed_running.status_code, resumed_running.json()["data"]["status"]) == (
        200,
        "running",
    )
    paused = await client.post(base + "/pause")
    assert paused.status_code == 200
    assert paused.headers["X-Poll-After"] == "1"
    assert paused.json()["data"]["status"] == "pausing"
    assert paused.json()["data"]["id"] == sandbox_id
    assert (await client.get(base)).json()["data"]["status"] == "paused"
    again = await client.post(base + "/pause")
    assert (again.status_code, again.json()["data"]["status"]) == (200, "paused")
    resumed = await client.post(base + "/resume")
    assert (resumed.status_code, resumed.json()["data"]["status"]) == (200, "resuming")
    assert resumed.headers["X-Poll-After"] == "1"
    assert (await client.get(base)).json()["data"]["status"] == "running"


async def test_pause_from_creating_and_resume_from_pausing_are_409(make_fake: MakeFake) -> None:
    fake = await make_fake(transitions=TransitionPolicy.after_reads(1))
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
    ) as c:
        created = (await c.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()
        base = f"/v1/sandboxes/{created['data']['id']}"
        pause = await c.post(base + "/pause")
        assert pause.status_code == 409
        assert pause.json() == {
            "status": "fail",
            "data": {"code": "invalid_state", "message": "sandbox is not running"},
        }
        assert (await c.get(base)).json()["data"]["status"] == "creating"
        assert (await c.get(base)).json()["data"]["status"] == "running"
        assert (await c.post(base + "/pause")).status_code == 200
        resume = await c.post(base + "/resume")
        assert resume.status_code == 409
        assert resume.json()["data"]["message"] == "sandbox must be paused or error to resume"


async def test_resume_from_error_is_accepted(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    fake.sandbox(sandbox_id).force_status("error")
    response = await client.post(f"/v1/sandboxes/{sandbox_id}/resume")
    assert (response.status_code, response.json()["data"]["status"]) == (200, "resuming")


async def test_after_reads_shows_transitional_state_for_n_reads() -> None:
    async with FakeCreateOS(transitions=TransitionPolicy.after_reads(2)) as fake:
        async with httpx.AsyncClient(
            verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
        ) as c:
            sandbox_id = (await c.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()[
                "data"
            ]["id"]
            seen = [
                (await c.get(f"/v1/sandboxes/{sandbox_id}")).json()["data"]["status"]
                for _ in range(3)
            ]
    assert seen == ["creating", "creating", "running"]


async def _until(condition: Callable[[], bool]) -> None:
    """Let the loop run (the request reaches the fake) until ``condition`` holds."""
    for _ in range(100_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


async def test_durations_run_on_the_virtual_clock() -> None:
    clock = VirtualClock(autojump=False)
    async with FakeCreateOS(clock=clock) as fake:
        async with httpx.AsyncClient(
            verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
        ) as c:
            # Create blocks for the spawn time; a concurrent GET sees ``creating`` meanwhile.
            creating = asyncio.ensure_future(c.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"}))
            await _until(lambda: bool(fake.sandboxes()))
            sandbox_id = fake.sandboxes()[0].id
            base = f"/v1/sandboxes/{sandbox_id}"

            async def status() -> str:
                result: str = (await c.get(base)).json()["data"]["status"]
                return result

            assert await status() == "creating"
            assert not creating.done()
            clock.advance(0.05)
            created = await creating
            assert (created.status_code, created.json()["data"]["status"]) == (200, "running")
            assert await status() == "running"
            await c.post(base + "/pause")
            clock.advance(1.9)
            assert await status() == "pausing"
            clock.advance(0.1)
            assert await status() == "paused"
            await c.post(base + "/resume")
            clock.advance(2.9)
            assert await status() == "resuming"
            clock.advance(0.1)
            assert await status() == "running"
        transitions = [e.detail for e in fake.journal.transitions(sandbox_id)]
        times = [round(e.time, 3) for e in fake.journal.transitions(sandbox_id)]
    assert transitions == [
        "- -> creating",
        "creating -> running",
        "running -> pausing",
        "pausing -> paused",
        "paused -> resuming",
        "resuming -> running",
    ]
    assert times == [0.0, 0.05, 0.05, 2.05, 2.05, 5.05]


async def test_delete_destroys_then_disappears(make_fake: MakeFake) -> None:
    clock = VirtualClock(autojump=False)
    fake = await make_fake(clock=clock, transitions=TransitionPolicy.immediate())
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
    ) as c:
        sandbox_id = (await c.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()["data"][
            "id"
        ]
        base = f"/v1/sandboxes/{sandbox_id}"
        deleted = await c.delete(base)
        assert (deleted.status_code, deleted.json()) == (
            200,
            {"status": "success", "data": {"id": sandbox_id, "status": "destroying"}},
        )
        shown = (await c.get(base)).json()["data"]
        assert shown["status"] == "destroyed"
        assert shown["destroyed_at"] == "2026-01-01T00:00:00.000Z"
        again = await c.delete(base)
        assert again.json()["data"]["status"] == "destroyed"
        clock.advance(60)
        assert (await c.get(base)).status_code == 404
        assert (await c.delete(base)).status_code == 404
        assert (await c.get("/v1/sandboxes")).json()["data"]["data"] == []


async def test_operations_on_a_paused_sandbox_are_409(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    base = f"/v1/sandboxes/{sandbox_id}"
    await client.post(base + "/pause")
    exec_response = await client.post(base + "/exec", json={"cmd": "true"})
    upload = await client.put(base + "/files", params={"path": "/tmp/x"}, content=b"x")
    processes = await client.get(base + "/processes")
    expected = {"code": "not_running", "message": "sandbox is paused, not running"}
    for response in (exec_response, upload, processes):
        assert (response.status_code, response.json()["data"]) == (409, expected)


async def test_ids_are_seeded_and_reproducible() -> None:
    ids = []
    for _ in range(2):
        async with FakeCreateOS(seed=7, transitions=TransitionPolicy.immediate()) as fake:
            async with httpx.AsyncClient(
                verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
            ) as c:
                data = (await c.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()["data"]
                ids.append((fake.api_key, data["id"], data["name"], data["ip"]))
    assert ids[0] == ids[1]
    assert ids[0][0].startswith("cos_live_")
    assert len(ids[0][0]) == 41


async def test_pending_transitions_are_on_the_clock_for_wall_time_pollers(
    make_fake: MakeFake,
) -> None:
    """The official SDK polls on wall time; the completion time must be a clock deadline so
    a virtual clock jumps to it once everything is quiet."""
    clock = VirtualClock(autojump=False)
    fake = await make_fake(clock=clock)
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
    ) as c:
        creating = asyncio.ensure_future(c.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"}))
        await _until(lambda: clock.next_deadline() is not None)
        assert clock.next_deadline() == pytest.approx(0.05)
        clock.advance(0.05)
        sandbox_id = (await creating).json()["data"]["id"]
        assert fake.sandbox(sandbox_id).status == "running"
        await c.post(f"/v1/sandboxes/{sandbox_id}/pause")
        assert clock.next_deadline() == pytest.approx(2.05)


async def test_fork_answers_200_with_the_child_forking(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    """Like pause and resume: 200, the projection in its transitional status, X-Poll-After."""
    base = f"/v1/sandboxes/{await make_sandbox()}"
    assert (await client.post(base + "/pause")).status_code == 200
    assert (await client.get(base)).json()["data"]["status"] == "paused"
    forked = await client.post(base + "/fork", json={})
    assert (forked.status_code, forked.json()["data"]["status"]) == (200, "forking")
    assert forked.headers["X-Poll-After"] == "1"
    child = f"/v1/sandboxes/{forked.json()['data']['id']}"
    assert (await client.get(child)).json()["data"]["status"] == "running"
    assert (await client.delete(child)).status_code == 200
    assert (await client.delete(base)).status_code == 200


async def test_a_request_naming_a_sandbox_a_fork_is_copying_waits_for_the_copy(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: MakeSandbox,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The copy runs off the loop (``Machine.fork_async``, held here until released): a
    resume of the source sent meanwhile waits for it, so the fork still finds its source
    paused, and other sandboxes answer throughout (``http.forkgate``)."""
    source, other = await make_sandbox(), await make_sandbox()
    base = f"/v1/sandboxes/{source}"
    assert (await client.post(base + "/pause")).status_code == 200
    copying, release = asyncio.Event(), asyncio.Event()
    kind = type(fake.sandbox(source).machine)
    plain = kind.fork_async

    async def held(self: object) -> object:
        copying.set()
        await release.wait()
        return await plain(self)  # type: ignore[arg-type]

    monkeypatch.setattr(kind, "fork_async", held)
    fork = asyncio.ensure_future(client.post(base + "/fork", json={}))
    await copying.wait()
    resume = asyncio.ensure_future(client.post(base + "/resume"))
    for _ in range(100_000):  # until the resume reached the fake (journaled on arrival)
        if fake.journal.filter(kind="request", operation="resume_sandbox", sandbox_id=source):
            break
        await asyncio.sleep(0)
    assert (await client.get(f"/v1/sandboxes/{other}")).status_code == 200
    assert not resume.done()
    assert fake.sandbox(source).status == "paused"
    release.set()
    forked, resumed = await fork, await resume
    assert (forked.status_code, resumed.status_code) == (200, 200), forked.text
    assert fake.sandbox(forked.json()["data"]["id"]).forked_from == source
    assert fake.sandbox(source).status == "running"


async def test_a_fork_whose_copy_fails_answers_503_and_makes_nothing(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: MakeSandbox,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The host's disk fills during the copy, say: nothing is made, the source stays paused,
    and the client may retry (both SDKs retry a 503)."""
    source = await make_sandbox()
    base = f"/v1/sandboxes/{source}"
    assert (await client.post(base + "/pause")).status_code == 200

    async def failing(self: object) -> object:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(type(fake.sandbox(source).machine), "fork_async", failing)
    before = (await client.get("/v1/sandboxes")).json()["data"]
    forked = await client.post(base + "/fork", json={})
    assert (forked.status_code, forked.json()) == (
        503,
        {
            "status": "error",
            "code": 503,
            "message": "the sandbox's files could not be copied into a fork; nothing was made",
            "data": {"code": "fork_failed"},
        },
    )
    assert (await client.get("/v1/sandboxes")).json()["data"] == before
    assert fake.sandbox(source).status == "paused"
    assert fake.errors == []


async def test_two_forks_of_one_sandbox_sent_together_both_answer_200(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: MakeSandbox,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Copies of one sandbox never overlap: the second fork's waits for the first's, and
    both make a child."""
    source = await make_sandbox()
    base = f"/v1/sandboxes/{source}"
    assert (await client.post(base + "/pause")).status_code == 200
    copies: list[str] = []
    copying, release = asyncio.Event(), asyncio.Event()
    kind = type(fake.sandbox(source).machine)
    plain = kind.fork_async

    async def held(self: object) -> object:
        copies.append("started")
        copying.set()
        await release.wait()
        copies.append("ended")
        return await plain(self)  # type: ignore[arg-type]

    monkeypatch.setattr(kind, "fork_async", held)
    first = asyncio.ensure_future(client.post(base + "/fork", json={}))
    second = asyncio.ensure_future(client.post(base + "/fork", json={}))
    for _ in range(100_000):  # until both reached the fake
        if len(fake.journal.filter(kind="request", operation="fork_sandbox")) == 2:
            break
        await asyncio.sleep(0)
    await copying.wait()
    release.set()
    answers = [await first, await second]
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    assert copies == ["started", "ended", "started", "ended"]
    children = {a.json()["data"]["id"] for a in answers}
    assert len(children) == 2
    assert {fake.sandbox(c).forked_from for c in children} == {source}
