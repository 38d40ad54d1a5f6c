"""Limits: the shape is the machine, and a sandbox can neither lift nor leave its limits.

A hog past the shape's memory is killed inside its sandbox (exit 137, as the kernel's OOM
killer does on a VM) while the fake and the other sandboxes carry on; ``nproc`` shows the
shape's vCPUs; a fork flood stops at the process limit; what a sandbox writes to its disk is
not its memory; a disk cannot be asked bigger at create than a resize allows. The limits are
the host's cgroup files of the ``serve`` under test, which the sandbox cannot reach.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from fake_server.runtime.process.containment import cgroups, procview
from tests._needs import needs_command

if TYPE_CHECKING:
    from tests.security._attack import Target

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(
        isinstance(cgroups.hierarchy(), str), reason="no cgroup controller can be used here"
    ),
]

_HOG = (
    "python3 -c 'import mmap; m = mmap.mmap(-1, 2 << 30); "
    '[m.__setitem__(i, 1) for i in range(0, 2 << 30, 4096)]; print("survived")\'; '
    "echo status=$?"
)


def _groups(serve: Target, controller: str) -> list[Path]:
    found = cgroups.hierarchy()
    assert not isinstance(found, str)
    return sorted(found.dirs[controller].glob(f"createos-fake-{serve.serve.process.pid}-*"))


def test_a_hog_past_the_shapes_memory_is_killed_inside_and_nothing_else_notices(
    serve: Target,
) -> None:
    hog, other = serve.create(shape="s-1vcpu-1gb"), serve.create()
    code, out = serve.sh(hog, _HOG)
    assert (code, out.splitlines()[-1]) == (0, "status=137")
    assert "survived" not in out.splitlines()
    assert serve.ready()
    assert serve.sh(other, "echo ok") == (0, "ok\n")
    assert serve.sh(hog, "echo still here") == (0, "still here\n")
    metrics = serve.api.get(f"/v1/sandboxes/{hog}/metrics").json()["data"]
    assert metrics["memory"]["limit_bytes"] == 1 << 30
    limits = {path.read_text().strip() for path in _groups(serve, "memory") for path in
              [path / "memory.limit_in_bytes"] if path.exists()}  # fmt: skip
    assert str(1 << 30) in limits or not limits  # v2 hosts keep memory.max instead


def test_nproc_and_the_cpu_quota_are_the_shapes(serve: Target) -> None:
    sandbox = serve.create(shape="s-1vcpu-1gb")
    quarter = serve.create(shape="s-0.25vcpu-512mb")
    code, out = serve.sh(sandbox, "nproc")
    host = len(os.sched_getaffinity(0))
    assert (code, out) == (0, "1\n" if host > 1 else f"{host}\n")
    assert serve.sh(quarter, "nproc") == (code, out)
    quotas = [
        (path / "cpu.cfs_quota_us").read_text().strip()
        for path in _groups(serve, "cpu")
        if (path / "cpu.cfs_quota_us").exists()
    ]
    # one vCPU: one CPU's time per period; a quarter vCPU: a quarter of it
    assert set(quotas) == {str(cgroups.PERIOD_US), str(cgroups.PERIOD_US // 4)}


@needs_command("lxcfs", "lxcfs", "apt-get install lxcfs")
def test_free_and_proc_show_the_shape_not_the_host(serve: Target) -> None:
    assert procview.describe() in serve.serve.lines
    small, big = serve.create(shape="s-1vcpu-1gb"), serve.create(shape="s-2vcpu-4gb")
    free = "free -m | awk '/^Mem:/ {print $2}'; grep -c ^processor /proc/cpuinfo"
    assert serve.sh(small, free) == (0, "1024\n1\n")
    vcpus = min(2, len(os.sched_getaffinity(0)))
    assert serve.sh(big, free) == (0, f"4096\n{vcpus}\n")
    # uptime is the sandbox's (booted after serve started), not the host's
    code, out = serve.sh(small, "cut -d' ' -f1 /proc/uptime")
    assert code == 0
    assert float(out) <= _age(serve.serve.process.pid) + 1
    # the files are read-only: the sandbox's root cannot write them or unmount the view
    code, out = serve.sh(small, "echo x > /proc/meminfo; umount /proc/meminfo; echo $?")
    assert out.splitlines()[-1] != "0"
    assert serve.sh(small, free) == (0, "1024\n1\n")


def _age(pid: int) -> float:
    """Seconds since process ``pid`` started (``/proc``'s start time against the uptime)."""
    start = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return uptime - start / os.sysconf("SC_CLK_TCK")


#: The attack that lifted the limit before: a cgroup namespace of its own, the v1 ``pids``
#: hierarchy mounted there, ``max`` written to its own group's ``pids.max``.
_LIFT = (
    "g=$(grep ':pids:' /proc/self/cgroup | cut -d: -f3); mkdir -p /tmp/cg; "
    'unshare -C sh -c "mount -t cgroup -o pids none /tmp/cg && '
    '(echo max > /tmp/cg/pids.max || echo max > /tmp/cg$g/pids.max)" 2>/dev/null; '
)


def test_a_fork_flood_stops_at_the_process_limit_it_cannot_lift(serve: Target) -> None:
    bombed, other = serve.create(), serve.create()
    flood = (
        "import errno, os, time\n"
        "n = 0\n"
        "try:\n"
        f"    while n < 4 * {cgroups.PIDS}:\n"
        "        if os.fork() == 0:\n"
        "            os.closerange(0, 3)\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "    print('unbounded', n)\n"
        "except OSError as exc:\n"
        f"    print(errno.errorcode[exc.errno], n <= {cgroups.PIDS})\n"
    )
    code, out = serve.sh(bombed, _LIFT + "python3 -c '" + flood.replace("'", "'\\''") + "'")
    assert (code, out) == (0, "EAGAIN True\n")
    assert serve.ready()
    assert serve.sh(other, "echo ok") == (0, "ok\n")
    assert serve.api.delete(f"/v1/sandboxes/{bombed}").status_code in (200, 202)


def test_what_a_sandbox_writes_to_its_disk_is_not_its_memory(serve: Target) -> None:
    sandbox = serve.create(shape="s-1vcpu-1gb")
    code, out = serve.sh(
        sandbox, "head -c 1400M /dev/zero > /root/big; echo $?; stat -c %s /root/big; rm /root/big"
    )
    assert (code, out) == (0, f"0\n{1400 << 20}\n")


def test_a_disk_bigger_than_a_resize_allows_is_refused_at_create(serve: Target) -> None:
    reply = serve.api.post(
        "/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "disk_mib": 99_999_999_999_999}
    )
    assert reply.status_code == 400
    assert reply.json() == {"status": "fail", "data": {"disk_mib": "must be at most 1048576"}}
