"""``serve``'s Host check, request log and key choice, in the test's loop (no subprocess)."""

from __future__ import annotations

import re

import httpx
import pytest

from fake_server import FakeCreateOS, tls_context
from fake_server.__main__ import serve_key
from fake_server.faults import EmptyReply, Fault
from fake_server.http.serve_guards import allowed_hosts, host_guard, host_name, request_log


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:8080", "127.0.0.1"),
        ("LocalHost.:8080", "localhost"),
        ("[::1]:8080", "[::1]"),
        ("[::1]", "[::1]"),
        ("::1", "[::1]"),
        ("evil.example", "evil.example"),
        ("localhost.evil.example:8080", "localhost.evil.example"),
    ],
)
def test_host_name_drops_the_port_and_case(header: str, name: str) -> None:
    assert host_name(header) == name


def test_allowed_hosts_are_loopback_the_bound_address_and_the_extra_names() -> None:
    assert allowed_hosts("0.0.0.0", ["Box.LAN"]) == {
        "localhost",
        "127.0.0.1",
        "[::1]",
        "0.0.0.0",
        "box.lan",
    }
    assert allowed_hosts("127.0.0.1", ["box.lan", "*"]) is None


def test_the_key_is_random_unless_given_or_seeded() -> None:
    first, second = serve_key(None, None), serve_key(None, None)
    assert first is not None
    assert re.fullmatch(r"cos_live_[0-9a-f]{32}", first)
    assert first != second
    assert serve_key(None, 7) is None  # the fake derives it from the seed
    assert FakeCreateOS(seed=7, api_key=serve_key(None, 7)).api_key == FakeCreateOS(seed=7).api_key
    assert serve_key("k-1", None) == serve_key("k-1", 7) == "k-1"


@pytest.mark.asyncio
async def test_refused_hosts_never_reach_the_fake_and_allowed_ones_do() -> None:
    lines: list[str] = []
    fake = FakeCreateOS()
    outer = [request_log(fake.faults, lines.append), host_guard(allowed_hosts("::1", ["box"]))]
    await fake.start_async(outer_middlewares=outer)
    try:
        async with httpx.AsyncClient(
            verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
        ) as client:
            allowed = [
                (await client.get("/v1/whoami", headers={"Host": host})).status_code
                for host in ("box:1", "localhost", "[::1]:9")
            ]
            refused = await client.get("/v1/whoami", headers={"Host": "rebound.example"})
        assert allowed == [200, 200, 200]
        assert refused.status_code == 403
        assert refused.json()["data"]["code"] == "host_not_allowed"
        assert [e.kind for e in fake.journal.events] == ["request", "response"] * 3
        assert [line.split()[:3] for line in lines] == [["GET", "/v1/whoami", "200"]] * 3 + [
            ["GET", "/v1/whoami", "403"]
        ]
    finally:
        await fake.aclose()


@pytest.mark.asyncio
async def test_the_log_names_faults_and_dropped_replies_without_query_values() -> None:
    lines: list[str] = []
    fake = FakeCreateOS()
    fake.faults.add(Fault(operation="whoami", action=EmptyReply(), times=1))
    await fake.start_async(outer_middlewares=[request_log(fake.faults, lines.append)])
    try:
        async with httpx.AsyncClient(
            verify=tls_context(), base_url=fake.url, headers={"X-Api-Key": fake.api_key}
        ) as client:
            with pytest.raises(httpx.RemoteProtocolError):
                await client.get("/v1/whoami", params={"token": "s3cret"})
            ok = await client.get("/v1/sandboxes/sb-%0Aforged", params={"q": "s3cret"})
        assert ok.status_code == 404
        assert len(lines) == 2
        assert re.fullmatch(r"GET /v1/whoami 499 \d+\.\dms fault #1 EmptyReply", lines[0])
        assert re.fullmatch(r"GET /v1/sandboxes/sb-%0Aforged 404 \d+\.\dms", lines[1])
        assert not any("s3cret" in line or fake.api_key in line for line in lines)
    finally:
        await fake.aclose()
