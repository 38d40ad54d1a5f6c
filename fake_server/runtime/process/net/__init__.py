"""The network of process-runtime sandboxes: namespaces, the router, DNS, egress rules, bridges.

Each sandbox's network namespace (``netns``), the fake's router and its uplink (``router``,
``netlink``, ``nft``, ``hostcheck``), the resolver and the metadata endpoint the router
answers on (``resolver``, ``metadata``), egress rules (``policy``), all put together as a
VM's ``eth0`` (``network``); account networks' bridges (``bridges``); and how a fake's
sandboxes get their network at all (``netmode``). Below it only the walls (``containment``).
"""
