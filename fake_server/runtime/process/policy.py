"""A sandbox's egress rules as the router's nftables enforce them (the service's semantics).

No rules, ``[]`` and ``["*"]`` allow everything: the sandbox's link has no entry in the
router's ``sandboxes`` map, and nothing is run at create. Address rules (``IP``, ``IP:port``,
CIDR, with or without a port) are enforced: the link's entry jumps to a chain of its own that
accepts those destinations (a port opens TCP and UDP) and drops everything else. Host-name
rules are stored and echoed but not enforced, as on the service (a rule set of only names
allows everything),. IPv6 rules are stored
only: a sandbox has no IPv6 route out. Whatever the rules, the router always answers at
169.254.0.0/16 (DNS, metadata) and the sandbox reaches its own address (it is local).
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


def commands(device: str, rules: Sequence[str], *, enforced_before: bool) -> tuple[list[str], bool]:
    """The nft batch that gives ``device`` its policy, and whether the policy enforces.

    ``enforced_before``: the link already has a chain (it is replaced)."""
    chain = f"{TABLE} {chain_of(device)}"
    addresses = egress.address_rules(rules)
    enforce = addresses is not None
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
    batch.append(f"add rule {chain} drop")
    batch.append(f'add element {TABLE} sandboxes {{ "{device}" : jump {chain_of(device)} }}')
    return batch, True


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
