"""The process runtime's egress policy as nft commands, and the resolver's pieces that need no
network: what each rule set becomes, and what a sandbox hears when no resolver is known."""

from __future__ import annotations

from typing import TYPE_CHECKING

import dns.flags
import dns.message
import dns.rcode

from fake_server.runtime.process.net import policy
from fake_server.runtime.process.net.resolver import host_resolver, refused

if TYPE_CHECKING:
    from pathlib import Path


def test_allow_all_rule_sets_cost_nothing() -> None:
    for rules in ([], ["*"], ["pypi.org", "*.github.com:443"], ["*", "10.0.0.0/8"]):
        assert policy.commands("s1", rules, enforced_before=False) == ([], False)


def test_address_rules_accept_their_destinations_and_drop_the_rest() -> None:
    batch, enforced = policy.commands(
        "s3", ["pypi.org", "203.0.113.7", "198.51.100.0/24:443", "2001:db8::/32"],
        enforced_before=False,
    )  # fmt: skip
    assert enforced
    assert batch == [
        "add chain inet egress p_s3",
        "add rule inet egress p_s3 ip daddr 203.0.113.7/32 accept",
        "add rule inet egress p_s3 ip daddr 198.51.100.0/24 meta l4proto { tcp, udp } "
        "th dport 443 accept",
        "add rule inet egress p_s3 drop",
        'add element inet egress sandboxes { "s3" : jump p_s3 }',
    ]


def test_a_new_rule_set_replaces_the_chain_and_allow_all_removes_it() -> None:
    batch, _ = policy.commands("s3", ["203.0.113.7:22"], enforced_before=True)
    assert batch[:2] == [
        'delete element inet egress sandboxes { "s3" }',
        "flush chain inet egress p_s3",
    ]
    assert batch[-1] == 'add element inet egress sandboxes { "s3" : jump p_s3 }'
    assert policy.commands("s3", ["*"], enforced_before=True) == (
        [
            'delete element inet egress sandboxes { "s3" }',
            "flush chain inet egress p_s3",
            "delete chain inet egress p_s3",
        ],
        False,
    )
    assert policy.forget("s3", enforced=False) == []
    assert policy.forget("s3", enforced=True)[-1] == "delete chain inet egress p_s3"


def test_the_strict_mode_enforces_names_through_learned_sets() -> None:
    batch, enforced = policy.commands("s2", ["pypi.org"], enforced_before=False, names=True)
    assert enforced
    assert "add rule inet egress p_s2 ip daddr @n_s2 accept" in batch
    assert "add rule inet egress p_s2 ip daddr . meta l4proto . th dport @np_s2 accept" in batch
    assert policy.commands("s2", ["*"], enforced_before=False, names=True) == ([], False)
    assert policy.names_learned("s2", ["203.0.113.9"], [None, 443], 30) == [
        "add element inet egress n_s2 { 203.0.113.9 timeout 300s }",
        "add element inet egress np_s2 { 203.0.113.9 . tcp . 443 timeout 300s, "
        "203.0.113.9 . udp . 443 timeout 300s }",
    ]
    assert policy.names_learned("s2", ["203.0.113.9"], [None], 3600) == [
        "add element inet egress n_s2 { 203.0.113.9 timeout 3600s }"
    ]


def test_the_hosts_first_ipv4_nameserver_is_the_upstream(tmp_path: Path) -> None:
    conf = tmp_path / "resolv.conf"
    conf.write_text("# comment\nsearch example\nnameserver ::1\nnameserver 10.0.0.53\n")
    assert host_resolver(str(conf)) == ("10.0.0.53", 53)
    conf.write_text("nameserver fe80::1\n")
    assert host_resolver(str(conf)) is None
    assert host_resolver(str(tmp_path / "missing")) is None


def test_without_an_upstream_each_query_is_refused_at_once() -> None:
    query = dns.message.make_query("pypi.org", "A")
    answer = dns.message.from_wire(refused(query.to_wire()))
    assert answer.id == query.id
    assert answer.rcode() == dns.rcode.REFUSED
    assert answer.flags & dns.flags.QR
    assert answer.question == query.question
    assert answer.answer == []
