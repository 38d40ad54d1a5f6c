"""FakeCreateOS lifecycle (in-loop and thread mode), reset, inspection and the control API."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import httpx
import pytest

from fake_server import FakeCreateOS, RealClock, TransitionPolicy, VirtualClock, tls_context
from fake_server.http.middlewares import UNAUTHORIZED_MESSAGE

if TYPE_CHECKING:
    from tests._fakes import MakeFake


def test_thread_mode_serves_sync_clients_and_closes_idempotently() -> None:
    fake = FakeCreateOS(
        transitions=TransitionPolicy.immediate(), api_key="cos-only-this-fake"
    ).start()
    try:
        assert fake.url.startswith("http://127.0.0.1:")
        with httpx.Client(
            verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
        ) as client:
            created = client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"}).json()["data"]
            assert fake.sandbox(created["id"]).status == "running"
            assert [s.id for s in fake.sandboxes()] == [created["id"]]
    finally:
        fake.close()
    fake.close()
    # The freed port may already serve another fake of this process: it must not be this one.
    try:
        answer = httpx.get(
            fake.url + "/v1/whoami", headers={"X-Api-Key": fake.api_key}, verify=tls_context()
        )
    except httpx.ConnectError:
        return
    assert answer.status_code == 401


def test_context_manager_starts_a_thread() -> None:
    with FakeCreateOS() as fake:
        assert httpx.get(fake.url + "/healthz", verify=tls_context()).json()["data"] == {"up": True}


def test_reset_restores_a_fresh_fake_on_the_same_port() -> None:
    with FakeCreateOS(seed=3, transitions=TransitionPolicy.immediate()) as fake:
        port, key = fake.port, fake.api_key
        with httpx.Client(
            verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": key}
        ) as client:
            first = client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"}).json()["data"]
            other = fake.add_account()
            fake.reset()
            assert fake.port == port
            assert fake.api_key == key
            assert client.get("/v1/sandboxes").json()["data"]["data"] == []
            assert client.get(f"/v1/sandboxes/{first['id']}").status_code == 404
            assert (
                httpx.get(
                    fake.url + "/v1/whoami", headers={"X-Api-Key": other}, verify=tls_context()
                ).status_code
                == 401
            )
            again = client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"}).json()["data"]
        assert again["id"] == first["id"]
        assert fake.journal.operations() == [
            "list_sandboxes",
            "get_sandbox",
            "whoami",
            "create_sandbox",
        ]
        started = time.perf_counter()
        fake.reset()
        assert time.perf_counter() - started < 0.05


@pytest.mark.asyncio
async def test_in_loop_start_and_stop_are_fast() -> None:
    FakeCreateOS()  # warm imports
    started = time.perf_counter()
    for _ in range(5):
        async with FakeCreateOS():
            pass
    assert (time.perf_counter() - started) / 5 < 0.05


@pytest.mark.asyncio
async def test_port_in_use_raises_oserror() -> None:
    async with FakeCreateOS() as first:
        with pytest.raises(OSError, match="address already in use"):
            async with FakeCreateOS(port=first.port):
                pass


def test_invalid_rate_limit_is_rejected() -> None:
    with pytest.raises(ValueError, match="rate_limit must be None"):
        FakeCreateOS(rate_limit=0)


@pytest.mark.asyncio
async def test_rate_limit_answers_429_with_retry_after(make_fake: MakeFake) -> None:
    clock = VirtualClock(autojump=False)
    fake = await make_fake(clock=clock, rate_limit=2)
    async with httpx.AsyncClient(
        verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
    ) as c:
        assert (await c.get("/v1/whoami")).status_code == 200
        assert (await c.get("/v1/whoami")).status_code == 200
        limited = await c.get("/v1/whoami")
        assert limited.status_code == 429
        assert limited.headers["Retry-After"] == "60"
        assert limited.json() == {
            "status": "fail",
            "data": {"code": "rate_limited", "message": "rate limit exceeded; retry later"},
        }
        clock.advance(60)
        assert (await c.get("/v1/whoami")).status_code == 200


@pytest.mark.asyncio
async def test_custom_middlewares_run_after_auth() -> None:
    from aiohttp import web

    from fake_server.http import ACCOUNT_KEY, OPERATION_KEY

    seen: list[tuple[str, str | None]] = []

    @web.middleware
    async def spy(request: web.Request, handler: object) -> web.StreamResponse:
        seen.append((request[OPERATION_KEY], request.get(ACCOUNT_KEY)))
        return await handler(request)  # type: ignore[operator, no-any-return]

    fake = FakeCreateOS()
    fake.middlewares.append(spy)
    async with fake:
        async with httpx.AsyncClient(
            verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
        ) as c:
            await c.get("/v1/whoami")
            await c.get("/healthz")
        account_id = fake.world.account_for_key(fake.api_key).id  # type: ignore[union-attr]
    assert seen == [("whoami", account_id), ("health", None)]


# -- control API -----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_control_api_state_journal_clock_transitions_reset(make_fake: MakeFake) -> None:
    clock = VirtualClock(autojump=False)
    fake = await make_fake(clock=clock)
    keys = {"X-Api-Key": fake.api_key, "X-Fake-Control-Key": fake.control_key}
    async with httpx.AsyncClient(verify=tls_context(), base_url=fake.url, headers=keys) as c:
        policy = await c.put(
            "/_fake/transitions", json={"preset": "immediate", "pausing": {"reads": 2}}
        )
        assert policy.json()["data"]["pausing"] == {"seconds": 0.0, "reads": 2}
        sandbox_id = (await c.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})).json()["data"][
            "id"
        ]
        state = (await c.get("/_fake/state")).json()["data"]
        assert state["accounts"][0]["sandboxes"] == [
            {"id": sandbox_id, "status": "running", "processes": []}
        ]
        assert fake.api_key not in str(state)
        advanced = await c.post("/_fake/clock/advance", json={"seconds": 12.5})
        assert advanced.json()["data"] == {"now": 12.5}
        unknown = await c.put("/_fake/transitions", json={"preset": "immediate", "pausng": {}})
        assert (unknown.status_code, unknown.json()) == (
            400,
            {"status": "fail", "data": {"pausng": "unknown field"}},
        )
        bad = await c.post("/_fake/clock/advance", json={"seconds": -1})
        assert bad.json() == {
            "status": "fail",
            "data": {"seconds": "must be between 0 and 1e9"},
        }
        journal = (await c.get("/_fake/journal")).json()["data"]["events"]
        assert [e["operation"] for e in journal if e["kind"] == "request"] == [
            "fake_transitions",
            "create_sandbox",
            "fake_state",
            "fake_clock_advance",
            "fake_transitions",
            "fake_clock_advance",
            "fake_journal",
        ]
        assert (await c.post("/_fake/reset")).json()["data"] == {"reset": True}
        assert fake.sandboxes() == []
        assert fake.transitions == TransitionPolicy.realistic()


@pytest.mark.asyncio
async def test_the_control_api_takes_only_the_control_key() -> None:
    async with FakeCreateOS(control_key="ctl-1") as fake:
        other = fake.add_account()
        async with httpx.AsyncClient(verify=tls_context(), base_url=fake.url) as c:
            answers = {
                name: await c.post("/_fake/reset", headers=headers)
                for name, headers in {
                    "none": {},
                    "account": {"X-Api-Key": fake.api_key},
                    "other account": {"X-Auth-Token": other},
                    "account as control key": {"X-Fake-Control-Key": fake.api_key},
                    "control key as account key": {"X-Api-Key": "ctl-1"},
                }.items()
            }
            assert (await c.get("/v1/whoami", headers={"X-Fake-Control-Key": "ctl-1"})).json() == {
                "status": "fail",
                "data": {"code": "unauthorized", "message": UNAUTHORIZED_MESSAGE},
            }
            allowed = await c.post("/_fake/reset", headers={"X-Fake-Control-Key": "ctl-1"})
    forbidden = {
        "code": "control_key_required",
        "message": "account API keys do not open the control API; send the fake's control key"
        " in X-Fake-Control-Key",
    }
    unauthorized = {
        "code": "unauthorized",
        "message": "missing or invalid control key (X-Fake-Control-Key)",
    }
    assert {name: (a.status_code, a.json()["data"]) for name, a in answers.items()} == {
        "none": (401, unauthorized),
        "account": (403, forbidden),
        "other account": (403, forbidden),
        "account as control key": (401, unauthorized),
        "control key as account key": (403, forbidden),
    }
    assert allowed.json()["data"] == {"reset": True}
    assert "ctl-1" not in str(fake.journal.format())


def test_each_fake_has_its_own_random_control_key() -> None:
    first, second = FakeCreateOS(), FakeCreateOS()
    assert first.control_key != second.control_key
    assert first.control_key.startswith("cos_fake_")
    assert len(first.control_key) == 41
    first.reset()
    assert first.control_key != first.api_key
    with pytest.raises(ValueError, match=r"^control_key must be non-empty, without outer"):
        FakeCreateOS(control_key=" x")


@pytest.mark.asyncio
async def test_control_clock_advance_on_a_real_clock_is_409() -> None:
    async with FakeCreateOS(clock=RealClock()) as fake:
        keys = {"X-Fake-Control-Key": fake.control_key}
        async with httpx.AsyncClient(verify=tls_context(), base_url=fake.url, headers=keys) as c:
            response = await c.post("/_fake/clock/advance", json={"seconds": 1})
    assert (response.status_code, response.json()["data"]) == (
        409,
        {"code": "real_clock", "message": "the fake runs on a real clock"},
    )


def test_public_names_are_sorted_and_importable() -> None:
    import fake_server

    assert fake_server.__all__ == sorted(fake_server.__all__)
    for name in fake_server.__all__:
        assert getattr(fake_server, name) is not None
    assert FakeCreateOS.__test__ is False  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", [-1, -7])
def test_a_negative_seed_is_refused(seed: int) -> None:
    """``random`` seeds ``-n`` like ``n``: a negative seed would repeat its twin's ids and key."""
    with pytest.raises(ValueError) as caught:
        FakeCreateOS(seed=seed)
    assert str(caught.value) == f"seed must be an integer >= 0; got {seed}"
    fake = FakeCreateOS(seed=1)
    with pytest.raises(ValueError) as caught:
        fake.reset(seed=seed)
    assert str(caught.value) == f"seed must be an integer >= 0; got {seed}"
    assert fake.seed == 1
