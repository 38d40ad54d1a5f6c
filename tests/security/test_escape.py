"""Escape: root in a sandbox is nobody on the host, and the kernel's knobs are not its own.

Each test repeats an attack seen against ``serve`` run as root: reading the user namespace's
map, writing a host-wide sysctl, opening ``kernel.core_pattern`` for writing, reading a
root-only host file through ``/proc``, mounting a cgroup hierarchy to lift a limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.security._attack import Target


@pytest.mark.xfail(strict=True, reason="sandbox root is the host's root (a one-id map)")
def test_root_in_a_sandbox_maps_to_an_unprivileged_range(serve: Target) -> None:
    sandbox = serve.create()
    code, out = serve.sh(sandbox, "id -u; cat /proc/self/uid_map /proc/self/gid_map")
    assert code == 0
    lines = out.split("\n")
    assert lines[0] == "0"
    for line in lines[1:3]:
        inside, outside, count = (int(n) for n in line.split())
        assert (inside, count) == (0, 65536)
        assert outside >= 65536  # no id of the host's users or system accounts
