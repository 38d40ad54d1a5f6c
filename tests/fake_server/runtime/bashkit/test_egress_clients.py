"""Egress rules inside a bashkit sandbox: ``curl`` and ``wget`` fail as the service's would,
with curl 8's and GNU wget's exact messages and exit statuses. The ``box`` enforces host-name
rules (the strict mode); the service's default, names stored but not enforced, has its own
tests at the end."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from fake_server.clock import VirtualClock
from fake_server.runtime.bashkit import CommandRegistry
from fake_server.runtime.bashkit.machine import BashkitMachine
from fake_server.runtime.egress import allows, effective, name_ports, verdict
from fake_server.runtime.netoptions import HostnameMode

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@dataclass
class Box:
    machine: BashkitMachine
    clock: VirtualClock

    async def sh(self, script: str) -> tuple[int, str, str]:
        out: list[bytes] = []
        err: list[bytes] = []

        async def to_out(data: bytes) -> None:
            out.append(data)

        async def to_err(data: bytes) -> None:
            err.append(data)

        runner = self.machine.runner(self.clock)
        code = await runner.run(["bash", "-c", script], on_stdout=to_out, on_stderr=to_err)
        return code, b"".join(out).decode(), b"".join(err).decode()

    def rules(self, *rules: str) -> None:
        self.machine.set_egress(list(rules), lambda: pytest.fail("bashkit moves no data"))


@pytest_asyncio.fixture
async def box() -> AsyncIterator[Box]:
    clock = VirtualClock()
    machine = BashkitMachine(CommandRegistry(), hostnames=HostnameMode(enforce=True))
    yield Box(machine, clock)
    machine.destroy()
    clock.close()


@pytest_asyncio.fixture
async def service_box() -> AsyncIterator[Box]:
    """A sandbox of a fake in the default mode: host-name rules are not enforced."""
    clock = VirtualClock()
    machine = BashkitMachine(CommandRegistry())
    yield Box(machine, clock)
    machine.destroy()
    clock.close()


RESET_HTTPS = "curl: (35) Recv failure: Connection reset by peer\n"
RESET_HTTP = "curl: (56) Recv failure: Connection reset by peer\n"


def test_rule_forms() -> None:
    rules = ["pypi.org", "*.example.com", "github.com:443", "10.1.0.0/16:8080"]
    assert allows(rules, "pypi.org", 80)
    assert allows(rules, "PyPI.org.", 443)
    assert allows(rules, "a.b.example.com", 443)
    assert not allows(rules, "example.com", 443)
    assert allows(rules, "github.com", 443)
    assert not allows(rules, "github.com", 80)
    assert allows(rules, "10.1.2.3", 8080)
    assert not allows(rules, "10.1.2.3", 80)
    assert not allows(rules, "10.2.0.1", 8080)
    assert not allows(rules, "evil.com", 443)
    assert allows(["fd00::/8"], "fd00::1", 443)  # an IPv6 network, as on the process runtime
    assert allows(["fd00::/8:443"], "fd00::1", 443)
    assert not allows(["fd00::/8:443"], "fd00::1", 80)


@pytest.mark.parametrize(
    ("rule", "host", "port", "allowed"),
    [
        ("2001:db8::1", "2001:db8::1", 443, True),  # a bare IPv6 address is not host:port
        ("2001:db8::1", "2001:0db8:0::1", 80, True),  # compared as addresses, not as text
        ("2001:db8::1", "2001:db8::2", 443, False),
        ("[2001:db8::1]:443", "2001:db8::1", 443, True),
        ("[2001:db8::1]:443", "[2001:db8::1]", 443, True),
        ("[2001:db8::1]:443", "2001:db8::1", 80, False),
        ("[2001:db8::1]", "2001:db8::1", 80, True),
        ("1password.com:443", "1password.com", 443, True),  # a name may start with a digit
        ("1password.com:443", "1password.com", 80, False),
    ],
)
def test_ipv6_rules_and_names_starting_with_digits(
    rule: str, host: str, port: int, allowed: bool
) -> None:
    assert allows([rule], host, port) is allowed


def test_no_rule_or_star_allows_everything_and_loopback_is_never_egress() -> None:
    assert allows([], "evil.com", 443)
    assert allows(["*"], "evil.com", 443)
    assert verdict(["pypi.org"], "localhost", 8080) == "refused"  # loopback is never egress
    assert verdict(["pypi.org"], "::1", 80) == "refused"
    assert verdict(["10.0.0.0/8"], "10.0.0.1", 80) == "refused"  # allowed: nothing answers
    assert verdict(["pypi.org"], "pypi.org", 443) == "unresolved"  # the fake has no internet


@pytest.mark.asyncio
async def test_curl_outside_the_rules_is_reset_after_connecting(box: Box) -> None:
    box.rules("pypi.org", "*.github.com:443")
    assert await box.sh("curl https://example.com") == (35, "", RESET_HTTPS)
    assert await box.sh("curl -o /dev/null http://example.com/x?y=1") == (56, "", RESET_HTTP)
    assert await box.sh("curl http://api.github.com") == (56, "", RESET_HTTP)  # port 80
    assert await box.sh("curl -sf https://example.com; echo $?") == (0, "35\n", "")
    assert await box.sh("curl -sS -H 'A: b' --max-time 5 example.com") == (56, "", RESET_HTTP)


@pytest.mark.asyncio
async def test_curl_to_allowed_hosts_and_loopback(box: Box) -> None:
    box.rules("pypi.org", "*.github.com:443", "10.0.0.0/8")
    assert await box.sh("curl -fsSL https://pypi.org/simple/") == (
        6,
        "",
        "curl: (6) Could not resolve host: pypi.org\n",
    )
    assert await box.sh("curl --url https://api.github.com/") == (
        6,
        "",
        "curl: (6) Could not resolve host: api.github.com\n",
    )
    refused = "curl: (7) Failed to connect to {} port {} after 0 ms: Couldn't connect to server\n"
    assert await box.sh("curl http://localhost:8080/health") == (
        7,
        "",
        refused.format("localhost", 8080),
    )
    assert await box.sh("curl -s 10.1.2.3; echo $?") == (0, "7\n", "")
    assert await box.sh("curl -X POST -d x 127.0.0.1:9") == (7, "", refused.format("127.0.0.1", 9))


@pytest.mark.asyncio
async def test_curl_usage_errors(box: Box) -> None:
    assert await box.sh("curl -s") == (
        2,
        "",
        "curl: no URL specified\ncurl: try 'curl --help' or 'curl --manual' for more information\n",
    )
    assert await box.sh("curl ftp://example.com/f") == (
        1,
        "",
        'curl: (1) Protocol "ftp" not supported\n',
    )
    assert await box.sh("curl http://example.com:99999/") == (
        3,
        "",
        "curl: (3) URL rejected: Port number was not a decimal number between 0 and 65535\n",
    )


@pytest.mark.asyncio
async def test_rules_apply_from_the_next_connection(box: Box) -> None:
    assert (await box.sh("curl https://example.com"))[0] == 6  # no rules: all allowed
    box.rules("pypi.org")
    assert (await box.sh("curl https://example.com"))[0] == 35
    box.rules("*")
    assert (await box.sh("curl https://example.com"))[0] == 6


@pytest.mark.asyncio
async def test_wget_messages(box: Box) -> None:
    box.rules("pypi.org")
    stamp = "--2026-01-01 00:00:00--  "
    assert await box.sh("wget -q -O- https://example.com") == (4, "", "")
    assert await box.sh("wget https://example.com") == (
        4,
        "",
        f"{stamp}https://example.com/\n"
        "Resolving example.com (example.com)... 198.18.78.4\n"
        "Connecting to example.com (example.com)|198.18.78.4|:443... connected.\n"
        "Unable to establish SSL connection.\n",
    )
    assert (await box.sh("wget -nv http://example.com/f")) == (4, "", "")
    assert await box.sh("wget -O /tmp/x pypi.org/simple") == (
        4,
        "",
        f"{stamp}http://pypi.org/simple\n"
        "Resolving pypi.org (pypi.org)... failed: Name or service not known.\n"
        "wget: unable to resolve host address ‘pypi.org’\n",
    )
    assert await box.sh("wget -nv https://pypi.org/") == (
        4,
        "",
        "wget: unable to resolve host address ‘pypi.org’\n",
    )
    assert await box.sh("wget http://127.0.0.1:8080/") == (
        4,
        "",
        f"{stamp}http://127.0.0.1:8080/\n"
        "Connecting to 127.0.0.1:8080... failed: Connection refused.\n",
    )


def test_only_address_rules_are_enforced_unless_names_are() -> None:
    rules = ["pypi.org", "*.github.com:443", "203.0.113.0/24:443"]
    assert effective(rules, names=False) == ["203.0.113.0/24:443"]
    assert effective(rules, names=True) == rules
    assert effective(["pypi.org", "*.github.com"], names=False) == []  # names alone: all
    assert effective(["*", "pypi.org"], names=False) == ["*", "pypi.org"]
    assert name_ports(rules, "API.github.com.") == [443]
    assert name_ports(["pypi.org", "pypi.org:443"], "pypi.org") == [None, 443]
    assert name_ports(rules, "example.com") is None
    assert name_ports(["10.0.0.0/8"], "10.1.2.3") is None


@pytest.mark.asyncio
async def test_by_default_host_name_rules_are_stored_but_not_enforced(service_box: Box) -> None:
    service_box.rules("pypi.org")  # names alone allow everything: example.com is allowed
    assert await service_box.sh("curl https://example.com") == (
        6,
        "",
        "curl: (6) Could not resolve host: example.com\n",
    )
    service_box.rules("pypi.org", "203.0.113.0/24")  # an address rule: the rest is cut off
    assert await service_box.sh("curl https://pypi.org") == (35, "", RESET_HTTPS)
    assert await service_box.sh("curl -sS http://203.0.113.9/") == (
        7,
        "",
        "curl: (7) Failed to connect to 203.0.113.9 port 80 after 0 ms: Couldn't connect to "
        "server\n",
    )
