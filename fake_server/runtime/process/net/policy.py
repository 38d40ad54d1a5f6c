"""A sandbox's egress rules as the router's nftables enforce them (the service's semantics).

No rules, ``[]`` and ``["*"]`` allow everything: the sandbox's link has no entry in the
router's ``sandboxes`` map, and nothing is run at create. Address rules (``IP``, ``IP:port``,
CIDR, with or without a port) are enforced: the link's entry jumps to a chain of its own that
accepts those destinations (a port opens TCP and UDP) and drops everything else. Host-name
rules are stored and echoed but not enforced, as on the service (a rule set of only names
allows everything), unless the fake is in the strict mode (``serve --egress-hostnames
enforce``): then the resolver opens, for the asking sandbox, each address a DNS answer gives
for a name its rules allow (on the rule's port, or every port), for the answer's TTL and at
least five minutes; addresses a program learned otherwise (DNS over TCP or HTTPS, a
literal) stay closed. IPv6 rules are stored only: a sandbox has no IPv6 route out. Whatever
the rules, the router answers at 169.254.0.0/16 (DNS, metadata) and the sandbox reaches its
own address (it is local).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.runtime import egress

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["TABLE", "chain_of", "commands"]

TABLE = "inet egress"


def chain_of(device: str) -> str:
    return f"p_{device}"


def commands(
    device: str, rules: Sequence[str], *, enforced_before: bool, names: bool = False
) -> tuple[list[str], bool]:
    """The nft batch that gives ``device`` its policy, and whether the policy enforces.

    ``enforced_before``: the link already has a chain (it is replaced). ``names`` (the strict
    mode): host-name rules are enforced too, through two sets the resolver fills with the
    addresses their names resolve to (``names_learned``)."""
    chain = f"{TABLE} {chain_of(device)}"
    addresses = egress.address_rules(rules)
    enforce = addresses is not None or (names and bool(rules) and "*" not in rules)
    batch: list[str] = []
    if enforced_before:
        batch += [f'delete element {TABLE} sandboxes {{ "{device}" }}', f"flush chain {chain}"]
        if not enforce:
            return [*batch, f"delete chain {chain}"], False
    elif not enforce:
        return [], False
    else:
        batch.append(f"add chain {chain}")
    for rule in addresses or ():
        if rule.network.version != 4:
            continue
        if rule.port is None:
            batch.append(f"add rule {chain} ip daddr {rule.network} accept")
        else:
            batch.append(
                f"add rule {chain} ip daddr {rule.network} meta l4proto {{ tcp, udp }} "
                f"th dport {rule.port} accept"
            )
    if names:
        batch += [
            f"add set {TABLE} n_{device} {{ type ipv4_addr; flags timeout; }}",
            f"add set {TABLE} np_{device} {{ type ipv4_addr . inet_proto . inet_service; "
            "flags timeout; }",
            f"add rule {chain} ip daddr @n_{device} accept",
            f"add rule {chain} ip daddr . meta l4proto . th dport @np_{device} accept",
        ]
    batch.append(f"add rule {chain} drop")
    batch.append(f'add element {TABLE} sandboxes {{ "{device}" : jump {chain_of(device)} }}')
    return batch, True


#: Seconds an address learned from a DNS answer stays open at least (answers with a shorter
#: TTL are often reused by programs for longer).
MIN_LEARNED = 300


def names_learned(
    device: str, addresses: Sequence[str], ports: Sequence[int | None], ttl: int
) -> list[str]:
    """The batch that opens ``addresses`` (a name's answer) on the ports its rules name."""
    timeout = f"{max(ttl, MIN_LEARNED)}s"
    batch = []
    for address in addresses:
        for port in sorted(set(ports), key=lambda p: -1 if p is None else p):
            if port is None:
                batch.append(f"add element {TABLE} n_{device} {{ {address} timeout {timeout} }}")
            else:
                batch.append(
                    f"add element {TABLE} np_{device} {{ {address} . tcp . {port} timeout "
                    f"{timeout}, {address} . udp . {port} timeout {timeout} }}"
                )
    return batch


def forget(device: str, *, enforced: bool) -> list[str]:
    """The batch that removes a departing link's policy."""
    if not enforced:
        return []
    chain = f"{TABLE} {chain_of(device)}"
    return [
        f'delete element {TABLE} sandboxes {{ "{device}" }}',
        f"flush chain {chain}",
        f"delete chain {chain}",
    ]
