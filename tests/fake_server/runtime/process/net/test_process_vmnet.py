"""A process-runtime sandbox's network as a VM sees it: ``eth0`` with the API's address, a
default route, DNS, egress rules as the service enforces them, ingress to ``eth0`` only.

Names resolve through a DNS stub of the test and lead to servers in a namespace of the test
(``_netstubs``): no sandbox packet leaves the machine. Real programs take real time, so these
run in the reliability step; every wait is bounded and waits on what a program does.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import pytest_asyncio

from fake_server import FakeCreateOS, NetworkOptions, TransitionPolicy, VirtualClock
from fake_server.runtime.process import ProcessRuntime
from fake_server.runtime.process.net import hostcheck, nft, router
from fake_server.runtime.process.net.resolver import host_resolver
from tests._helpers import until
from tests.fake_server._process_runtime import api_sh, needs_nft
from tests.fake_server.runtime.process.net._netstubs import DnsStub, Upstream, on_host

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests._fakes import MakeFake

#: Sandboxes' way out: NAT and egress rules are nftables'.
pytestmark = [pytest.mark.reliability, pytest.mark.asyncio, needs_nft]


PORT, OTHER_PORT = 8000, 8001


@pytest_asyncio.fixture(name="dns")
async def _dns() -> AsyncIterator[DnsStub]:
    stub = await DnsStub().start()
    yield stub
    stub.close()


@pytest_asyncio.fixture(name="upstream")
async def _upstream(dns: DnsStub) -> AsyncIterator[Upstream]:
    """``web.test``: two HTTP servers in a namespace of the test, reached through the host."""
    up = Upstream()
    await up.serve(PORT)
    await up.serve(OTHER_PORT, b"the other port\n")
    dns.table["web.test"] = up.address
    yield up
    up.close()


def vm_options(dns: DnsStub, hostnames: str = "ignore", **options: Any) -> dict[str, Any]:
    """A process-runtime fake's options whose sandboxes resolve names through ``dns``."""
    return {
        "clock": VirtualClock(),
        "transitions": TransitionPolicy.immediate(),
        "runtime": "process",
        "network": NetworkOptions(dns_upstream=dns.address, **options),
        "egress_hostnames": hostnames,
    }


def vm_fake(dns: DnsStub, hostnames: str = "ignore", **options: Any) -> FakeCreateOS:
    return FakeCreateOS(**vm_options(dns, hostnames, **options))


@pytest_asyncio.fixture(name="fake")
async def _fake(dns: DnsStub, make_fake: MakeFake) -> FakeCreateOS:
    return await make_fake(**vm_options(dns))


@pytest_asyncio.fixture(name="client")
async def _client(fake: FakeCreateOS) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=30
    ) as client:
        yield client


async def new_sandbox(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", **fields})
    assert created.status_code == 200, created.text
    data: dict[str, Any] = created.json()["data"]
    return data


async def run(client: httpx.AsyncClient, sid: str, script: str) -> tuple[int, str]:
    result = await api_sh(client, sid, script)
    return result["exit_code"], result["stdout"] + result["stderr"]


async def set_egress(client: httpx.AsyncClient, sid: str, rules: list[str]) -> None:
    done = await client.put(f"/v1/sandboxes/{sid}/egress", json={"egress": rules})
    assert done.status_code == 200, done.text


def curl(url: str) -> str:
    """curl's exit status for ``url``, allowed one second to connect (a dropped SYN is 28)."""
    return f"curl -s -o /dev/null --connect-timeout 1 {url}; echo $?"


async def test_eth0_has_the_api_address_a_default_route_and_a_resolver(
    client: httpx.AsyncClient,
) -> None:
    sandbox = await new_sandbox(client)
    sid, ip = sandbox["id"], sandbox["ip"]
    code, out = await run(
        client,
        sid,
        "ip -br -4 addr show eth0 | tr -s ' ' | cut -d' ' -f3; ip route; cat /etc/resolv.conf",
    )
    assert (code, out) == (
        0,
        f"{ip}/32\ndefault via 169.254.0.1 dev eth0 proto static \n"
        "169.254.0.1 dev eth0 proto static scope link \nnameserver 169.254.0.1\n",
    )
    found = await client.get(f"/v1/sandboxes/by-ip/{ip}")
    assert found.json()["data"]["id"] == sid


async def test_every_client_resolves_names_and_connects_without_proxy_variables(
    client: httpx.AsyncClient, upstream: Upstream, dns: DnsStub
) -> None:
    sid = (await new_sandbox(client))["id"]
    url = f"http://web.test:{PORT}"
    script = "; ".join(
        [
            "env | grep -ci proxy",
            "getent hosts web.test | tr -s ' '",
            f"curl -sS {url}/curl",
            f"wget -qO- {url}/wget",
            f"python3 -c 'import urllib.request as u; print(u.urlopen(\"{url}/py\").read())'",
            f'node -e \'fetch("{url}/node").then(r => r.text())'
            ".then(t => process.stdout.write(t))'",
            f"git ls-remote {url}/repo.git 2>&1 | head -c 0",
        ]
    )
    code, out = await run(client, sid, script)
    hello = "hello from upstream\n"
    assert (code, out) == (
        0,
        f"0\n{upstream.address} web.test\n{hello}{hello}b'{hello[:-1]}\\n'\n{hello}",
    )
    paths = [line.split()[1] for _peer, line in upstream.hits]
    assert paths[:4] == ["/curl", "/wget", "/py", "/node"]
    assert paths[4].startswith("/repo.git/info/refs")
    assert {peer for peer, _line in upstream.hits} == {upstream.gateway}  # NAT: the host's
    assert "web.test" in dns.asked
    missing = await run(client, sid, "getent hosts nowhere.test; echo $?")
    assert missing == (0, "2\n")  # NXDOMAIN from the resolver, at once


async def test_the_preview_url_reaches_eth0_never_loopback(client: httpx.AsyncClient) -> None:
    sandbox = await new_sandbox(client, ingress_enabled=True)
    sid, template = sandbox["id"], sandbox["ingress_url_template"]
    for port, bind in ((8080, "127.0.0.1"), (8081, "0.0.0.0")):
        started = await client.post(
            f"/v1/sandboxes/{sid}/processes",
            json={"cmd": "python3", "args": ["-m", "http.server", str(port), "--bind", bind]},
        )
        assert started.status_code == 201, started.text

    async def up() -> bool:
        return (await client.get(template.replace("<port>", "8081"))).status_code == 200

    async def up_inside() -> bool:  # the other server runs, on the sandbox's loopback
        probe = "curl -s -o /dev/null -w '%{http_code}' 127.0.0.1:8080"
        return await run(client, sid, probe) == (0, "200")

    # Two servers start at their own pace: wait for each (one answering says nothing of the other).
    await until(up)
    await until(up_inside)
    loopback = await client.get(template.replace("<port>", "8080"))
    nothing = await client.get(template.replace("<port>", "8082"))
    assert loopback.status_code == nothing.status_code == 502
    assert loopback.json()["message"] == "no server is listening on port 8080 in the sandbox"


@pytest.mark.parametrize("rules", [None, [], ["*"], ["web.test"], ["*.test:443"]])
async def test_no_rules_a_star_and_host_names_alone_allow_everything(
    client: httpx.AsyncClient, upstream: Upstream, rules: list[str] | None
) -> None:
    sid = (await new_sandbox(client, egress=rules))["id"]
    got = await client.get(f"/v1/sandboxes/{sid}")
    assert got.json()["data"]["egress"] == (rules or [])  # stored and echoed
    code, out = await run(client, sid, curl(f"http://web.test:{OTHER_PORT}/"))
    assert (code, out) == (0, "0\n")


async def test_address_rules_are_enforced_and_everything_else_is_dropped(
    client: httpx.AsyncClient, upstream: Upstream
) -> None:
    sid = (await new_sandbox(client))["id"]
    here, there = f"http://web.test:{PORT}/", f"http://web.test:{OTHER_PORT}/"
    await set_egress(client, sid, [f"{upstream.address}:{PORT}", "web.test"])
    assert await run(client, sid, f"{curl(here)}; {curl(there)}") == (0, "0\n28\n")
    await set_egress(client, sid, [f"{upstream.gateway}/30"])
    assert await run(client, sid, f"{curl(here)}; {curl(there)}") == (0, "0\n0\n")
    await set_egress(client, sid, ["240.0.0.0/4"])  # langflow's "no network"
    assert await run(client, sid, f"{curl(here)}; {curl(there)}") == (0, "28\n28\n")
    await set_egress(client, sid, [])
    assert await run(client, sid, f"{curl(here)}; {curl(there)}") == (0, "0\n0\n")


async def test_metadata_dns_and_the_own_address_stay_reachable_under_deny_all(
    client: httpx.AsyncClient, upstream: Upstream
) -> None:
    sandbox = await new_sandbox(client)
    sid, ip = sandbox["id"], sandbox["ip"]
    await set_egress(client, sid, ["240.0.0.0/4"])
    code, out = await run(
        client,
        sid,
        "curl -sS -i http://169.254.169.254/ | head -1 | tr -d '\\r'; "
        "curl -sS http://169.254.169.254/; "
        "curl -s -o /dev/null -w '%{http_code}\\n' http://169.254.169.254/other; "
        "getent hosts web.test | tr -s ' '; "
        f"python3 -c \"import socket; s = socket.create_server(('{ip}', 9000)); "
        f"socket.create_connection(('{ip}', 9000), timeout=2); print('own ok')\"",
    )
    lines = out.splitlines()
    assert code == 0, out
    assert lines[0] == "HTTP/1.1 200 OK"
    assert json.loads(lines[1]) == {"sandbox_id": sid, "ip": ip}
    assert lines[2:] == ["404", f"{upstream.address} web.test", "own ok"]


async def test_the_host_its_loopback_and_private_ranges_are_out_of_reach(
    fake: FakeCreateOS, client: httpx.AsyncClient, upstream: Upstream
) -> None:
    """The host's own addresses (the fake's API among them) and 10/8, 172.16/12,
    192.168/16, 100.64/10 are refused at once; the host's loopback is the sandbox's own."""
    first, second = await new_sandbox(client), await new_sandbox(client)
    targets = [
        f"http://{upstream.gateway}:{fake.port}/v1/sandboxes",  # the host itself
        f"http://127.0.0.1:{fake.port}/",  # the sandbox's own loopback: nothing there
        f"http://{second['ip']}:22/",  # another sandbox, by its address
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://100.64.0.1/",
    ]
    code, out = await run(client, first["id"], "; ".join(curl(url) for url in targets))
    assert (code, out) == (0, "7\n" * len(targets))


async def test_a_documented_option_opens_private_ranges(
    client: httpx.AsyncClient, dns: DnsStub
) -> None:
    lan = Upstream("172.31.0.0/16")  # a "LAN" of the test's own, on the host's side
    try:
        await lan.serve(PORT)
        url = f"http://{lan.address}:{PORT}/"
        sid = (await new_sandbox(client))["id"]
        assert await run(client, sid, curl(url)) == (0, "7\n")
        async with (
            vm_fake(dns, private=True) as fake,
            httpx.AsyncClient(
                base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=30
            ) as other,
        ):
            sid = (await new_sandbox(other))["id"]
            assert await run(other, sid, curl(url)) == (0, "0\n")
            assert await run(other, sid, curl(f"http://{lan.gateway}:{fake.port}/")) == (0, "7\n")
    finally:
        lan.close()


async def test_closing_the_fake_removes_every_link_table_and_namespace(dns: DnsStub) -> None:
    fake = vm_fake(dns)
    async with fake:
        async with httpx.AsyncClient(
            base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=30
        ) as client:
            for _ in range(3):
                await new_sandbox(client)
        runtime = fake.runtimes.get("process")
        assert isinstance(runtime, ProcessRuntime)
        router = runtime.network().router
        host_end, table = router.host_end, router.host_table
        assert on_host(lambda line: host_end in line, ["ip", "-br", "link"])
        assert on_host(lambda line: table in line, ["nft", "list", "tables"])
    assert on_host(lambda line: host_end in line, ["ip", "-br", "link"]) == []
    assert on_host(lambda line: table in line, ["nft", "list", "tables"]) == []
    assert on_host(lambda line: "createos" in line, ["ip", "netns", "list"]) == []  # unnamed


async def test_the_strict_mode_enforces_host_names_through_the_resolver(
    dns: DnsStub, upstream: Upstream
) -> None:
    """``serve --egress-hostnames enforce``: a name's addresses open once the sandbox's
    resolver answered it, on the rule's port only; an address typed directly stays closed."""
    dns.table["alias.test"] = upstream.address
    async with (
        vm_fake(dns, hostnames="enforce") as fake,
        httpx.AsyncClient(
            base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=30
        ) as client,
    ):
        assert fake.egress_hostnames == "enforce"
        sid = (await new_sandbox(client, egress=[f"web.test:{PORT}"]))["id"]
        literal = f"http://{upstream.address}:{PORT}/"
        assert await run(client, sid, curl(literal)) == (0, "28\n")  # not resolved yet
        here, there = f"http://web.test:{PORT}/", f"http://web.test:{OTHER_PORT}/"
        assert await run(client, sid, f"{curl(here)}; {curl(there)}") == (0, "0\n28\n")
        assert await run(client, sid, curl(literal)) == (0, "0\n")  # learned for the sandbox
        other = (await new_sandbox(client, egress=["alias.test"]))["id"]
        assert await run(client, other, curl(there)) == (0, "28\n")  # its rules, not the name
        assert await run(client, other, curl(f"http://alias.test:{OTHER_PORT}/")) == (0, "0\n")
        await set_egress(client, other, ["*"])
        assert await run(client, other, curl(there)) == (0, "0\n")


async def test_a_fork_gets_an_eth0_of_its_own(client: httpx.AsyncClient) -> None:
    source = await new_sandbox(client)
    paused = await client.post(f"/v1/sandboxes/{source['id']}/pause")
    assert paused.status_code in (200, 202), paused.text
    for _ in range(10):  # immediate transitions: paused on a next read
        got = await client.get(f"/v1/sandboxes/{source['id']}")
        if got.json()["data"]["status"] == "paused":
            break
    forked = await client.post(f"/v1/sandboxes/{source['id']}/fork", json={})
    assert forked.status_code in (200, 202), forked.text
    child = forked.json()["data"]
    assert child["ip"] != source["ip"]
    for _ in range(10):  # immediate transitions: running on a next read
        got = await client.get(f"/v1/sandboxes/{child['id']}")
        if got.json()["data"]["status"] == "running":
            break
    show = "ip -br -4 addr show eth0 | tr -s ' ' | cut -d' ' -f3"
    assert await run(client, child["id"], show) == (0, f"{child['ip']}/32\n")


async def test_pip_installs_a_small_package_from_pypi_without_proxy_variables() -> None:
    """The one test whose sandbox traffic leaves the machine: to PyPI, through the host's
    own resolver (the suite's fakes relay DNS nowhere else); pip installs system-wide."""
    network = NetworkOptions(dns_upstream=host_resolver())
    fake = FakeCreateOS(
        clock=VirtualClock(),
        transitions=TransitionPolicy.immediate(),
        runtime="process",
        network=network,
    )
    async with (
        fake,
        httpx.AsyncClient(
            base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=120
        ) as client,
    ):
        sid = (await new_sandbox(client))["id"]
        done = await client.post(
            f"/v1/sandboxes/{sid}/exec",
            json={
                "cmd": "/bin/bash",
                "args": [
                    "-c",
                    "pip install -q --no-deps iniconfig && "
                    "python3 -c 'import iniconfig; print(iniconfig.__file__)'",
                ],
                "timeout_ms": 110_000,
            },
        )
        result = done.json()["data"]["result"]
        # System-wide, as root, as the service's examples install (no refusal, no flags).
        assert result["exit_code"] == 0, result
        assert re.fullmatch(
            r"/usr/local/lib/python3\.\d+/dist-packages/iniconfig/__init__\.py\n",
            result["stdout"],
        ), result


async def test_without_an_uplink_sandboxes_keep_eth0_dns_and_previews_and_reach_nothing_else(
    dns: DnsStub, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``nft`` (or no forwarding): no NAT, so no packet passes the router; what the
    router itself serves still works, and egress rules change nothing."""
    monkeypatch.setattr(router, "uplink_missing", lambda: hostcheck.NFT_MISSING)
    async with (
        vm_fake(dns) as fake,
        httpx.AsyncClient(
            base_url=fake.url, headers={"X-Api-Key": fake.api_key}, timeout=30
        ) as client,
    ):
        sid = (await new_sandbox(client, egress=[f"{upstream.address}/32"]))["id"]
        runtime = fake.runtimes.get("process")
        assert isinstance(runtime, ProcessRuntime)
        assert runtime.network().uplink_missing == hostcheck.NFT_MISSING
        code, out = await run(
            client,
            sid,
            f"{curl(f'http://web.test:{PORT}/')}; "
            "curl -s -o /dev/null -w '%{http_code}\\n' http://169.254.169.254/",
        )
        assert (code, out) == (0, "7\n200\n")  # unreachable at once; metadata answers
        host_table = runtime.network().router.host_table
        assert on_host(lambda line: host_table in line, ["nft", "list", "tables"]) == []


async def test_a_killed_fakes_host_table_is_removed_by_the_next_router() -> None:
    """A fake killed before its close leaves ``createos_<pid>_<n>`` in the host's nftables
    (its veth goes with its router); a router made later deletes it, its pid being gone."""
    left = "createos_999999999_1"  # above any pid_max: never a live process
    nft.run([f"add table ip {left}"])
    router.sweep_host_tables()
    assert on_host(lambda line: left in line, ["nft", "list", "tables"]) == []
