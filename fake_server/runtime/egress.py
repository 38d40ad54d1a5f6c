"""A sandbox's egress rules, as the service applies them to a connection.

Rules are ``host``, ``*.domain`` or a CIDR (an IP is a /32, an IPv6 address a /128), each
optionally ``:port`` (``[2001:db8::1]:443`` for an IPv6 address with a port); no rules, or
``*``, allow everything. The service enforces address rules only: host-name rules are stored
and echoed, and a rule set of names alone allows everything (``effective``); a fake in the
strict mode (``serve --egress-hostnames enforce``) enforces names too. The service filters
connections, not names: DNS still resolves a host outside the list, and the connection is
cut once made (a bashkit sandbox's ``curl`` exits 35 on HTTPS, as the TypeScript SDK's
example ``49-egress-locked-agent-worker`` shows). Loopback is never egress.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "AddressRule",
    "Verdict",
    "address_rules",
    "allows",
    "effective",
    "is_ip",
    "is_loopback",
    "name_ports",
    "verdict",
]

#: What a connection to a host meets: nothing listening (loopback in a bashkit sandbox, or an
#: allowed address: the fake has no outside network), a reset (outside the rules), or an
#: allowed name that does not resolve (no outside network, no DNS).
Verdict = Literal["refused", "reset", "unresolved"]


_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class _Rule:
    host: str
    port: int | None
    #: The addresses of an IP or CIDR rule; ``None`` for a name or ``*.domain``.
    network: _Network | None = None


def _parse(rule: str) -> _Rule:
    """``host``, ``host:port``, an IP or CIDR (IPv6 bare, ``fd00::/8``, or bracketed with a
    port: ``[2001:db8::1]:443``)."""
    text = rule.strip().lower()
    port: int | None = None
    if text.startswith("["):
        inside, _, rest = text[1:].partition("]")
        if rest.startswith(":") and rest[1:].isdigit():
            port = int(rest[1:])
        text = inside
    else:
        whole = _network(text)
        if whole is not None:  # an address or network, colons and all: no port
            return _Rule(text, None, whole)
        host, sep, digits = text.rpartition(":")
        if sep and digits.isdigit() and host:
            text, port = host, int(digits)
    return _Rule(text.rstrip("."), port, _network(text))


def _network(text: str) -> _Network | None:
    if not text[:1].isdigit() and ":" not in text:
        return None  # a name: ip_network would only refuse it, more slowly
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _matches(rule: _Rule, host: str, port: int) -> bool:
    if rule.port is not None and rule.port != port:
        return False
    if rule.host.startswith("*."):
        return host.endswith(rule.host[1:])
    if rule.network is not None:
        address = _ip(host)
        return address is not None and address in rule.network
    return host == rule.host


@dataclass(frozen=True, slots=True)
class AddressRule:
    """An IP or CIDR rule: the network and, when given, the one port it opens."""

    network: _Network
    port: int | None


def address_rules(rules: Sequence[str]) -> list[AddressRule] | None:
    """The address rules of ``rules``; ``None`` when the rules allow everything (none given,
    ``*``, or only host names while host names are not enforced)."""
    if not rules or "*" in rules:
        return None
    found = [_parse(rule) for rule in rules]
    addresses = [AddressRule(r.network, r.port) for r in found if r.network is not None]
    return addresses or None


def effective(rules: Sequence[str], *, names: bool) -> list[str]:
    """The rules that are enforced: all of them when ``names`` (the strict mode), else the
    address rules alone, and none (everything allowed) when there are only names."""
    if names or not rules or "*" in rules:
        return list(rules)
    return [rule for rule in rules if _parse(rule).network is not None]


def name_ports(rules: Sequence[str], host: str) -> list[int | None] | None:
    """The ports the host-name rules open for ``host`` (``None`` in the list: every port);
    ``None`` when no host-name rule names it."""
    name = host.lower().rstrip(".")
    found = [
        parsed.port
        for parsed in (_parse(rule) for rule in rules if rule != "*")
        if parsed.network is None and _matches(parsed, name, parsed.port or 0)
    ]
    return found or None


def is_ip(host: str) -> bool:
    return _ip(host) is not None


def is_loopback(host: str) -> bool:
    address = _ip(host)
    return host == "localhost" or (address is not None and address.is_loopback)


def allows(rules: Sequence[str], host: str, port: int) -> bool:
    """True when a connection to ``host:port`` leaves the sandbox under ``rules``."""
    if not rules or "*" in rules:
        return True
    name = host.lower().rstrip(".")
    return any(_matches(_parse(rule), name, port) for rule in rules)


def verdict(rules: Sequence[str], host: str, port: int) -> Verdict:
    """What a connection from a bashkit sandbox to ``host:port`` meets."""
    if is_loopback(host):
        return "refused"
    if not allows(rules, host, port):
        return "reset"
    return "refused" if _ip(host) is not None else "unresolved"
