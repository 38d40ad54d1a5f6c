"""Escape: root in a sandbox is nobody on the host, and the kernel's knobs are not its own.

Each test repeats an attack seen against ``serve`` run as root: reading the user namespace's
map, writing a host-wide sysctl, opening ``kernel.core_pattern`` for writing, reading what
``/proc`` shows only the host's root, mounting a cgroup hierarchy or a fresh ``/proc`` to lift
a mask, making a namespace of its own, and the kernel facilities a container may not use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.security._attack import Target

pytestmark = pytest.mark.reliability


@pytest.fixture(name="sandbox", scope="module")
def _sandbox(serve: Target) -> str:
    return serve.create()


def test_root_in_a_sandbox_maps_to_an_unprivileged_range(serve: Target, sandbox: str) -> None:
    code, out = serve.sh(sandbox, "id -u; cat /proc/self/uid_map /proc/self/gid_map")
    assert code == 0
    lines = out.split("\n")
    assert lines[0] == "0"
    for line in lines[1:3]:
        inside, outside, count = (int(n) for n in line.split())
        assert (inside, count) == (0, 65536)
        assert outside >= 65536  # no id of the host's users or system accounts


def test_host_wide_sysctls_and_the_core_pattern_cannot_be_written(
    serve: Target, sandbox: str
) -> None:
    script = (
        "before=$(cat /proc/sys/kernel/core_uses_pid)\n"
        "echo 1 > /proc/sys/kernel/core_uses_pid; echo uses_pid=$?\n"
        "echo '|/tmp/x' > /proc/sys/kernel/core_pattern; echo pattern=$?\n"
        "echo b > /proc/sysrq-trigger; echo sysrq=$?\n"
        'test "$(cat /proc/sys/kernel/core_uses_pid)" = "$before"; echo same=$?\n'
        "grep -c ' /proc/sys ro' /proc/self/mounts | head -1; true"
    )
    code, out = serve.sh(sandbox, script)
    assert code == 0
    results = dict(line.split("=") for line in out.splitlines() if "=" in line)
    assert results == {"uses_pid": "1", "pattern": "1", "sysrq": "1", "same": "0"}
    assert "Read-only file system" in out


def test_proc_shows_nothing_only_the_hosts_root_may_see(serve: Target, sandbox: str) -> None:
    script = (
        "for f in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug; do\n"
        '  test -e $f && echo "$f $(head -c 64 $f 2>/dev/null | wc -c)"\n'
        "done\n"
        "awk 'NR==1 {print $1}' /proc/kallsyms"
    )
    code, out = serve.sh(sandbox, script)
    assert code == 0
    lines = out.splitlines()
    assert lines[-1] == "0000000000000000"  # kernel addresses hidden from a non-host root
    for line in lines[:-1]:
        assert line.endswith(" 0"), line  # masked: empty


def test_no_cgroup_hierarchy_or_proc_can_be_mounted_and_no_namespace_made(
    serve: Target, sandbox: str
) -> None:
    script = (
        "mkdir -p /tmp/cg; mount -t cgroup -o pids none /tmp/cg 2>/dev/null; echo cgroup=$?\n"
        "mount -t cgroup2 none /tmp/cg 2>/dev/null; echo cgroup2=$?\n"
        "mount -t proc proc /tmp/cg 2>/dev/null; echo proc=$?\n"
        "umount /proc/sys 2>/dev/null; echo umount=$?\n"
        "unshare -C true 2>/dev/null; echo cgroupns=$?\n"
        "unshare -U true 2>/dev/null; echo userns=$?\n"
        "unshare -m true 2>/dev/null; echo mountns=$?"
    )
    code, out = serve.sh(sandbox, script)
    assert code == 0
    results = dict(line.split("=") for line in out.splitlines())
    assert all(status != "0" for status in results.values()), results


def test_the_kernels_facilities_a_container_may_not_use_answer_eperm(
    serve: Target, sandbox: str
) -> None:
    import pyseccomp  # type: ignore[import-untyped]

    names = ["keyctl", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "add_key"]
    numbers = {name: pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name) for name in names}
    program = (
        "import ctypes, errno\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"for name, number in {numbers!r}.items():\n"
        "    status = libc.syscall(number, 0, 0, 0, 0, 0)\n"
        "    print(name, errno.errorcode.get(ctypes.get_errno()) if status < 0 else 'ALLOWED')\n"
    )
    code, out = serve.sh(sandbox, f"python3 -c {_quote(program)}")
    assert code == 0
    assert out.splitlines() == [f"{name} EPERM" for name in names]


def test_what_root_owns_on_the_host_is_nobodys_in_the_sandbox(serve: Target, sandbox: str) -> None:
    """The image's files are root's inside (idmapped), and what the sandbox writes or the files
    API uploads belongs to its root too; nothing is the host's root's."""
    uploaded = serve.api.put(
        f"/v1/sandboxes/{sandbox}/files", params={"path": "/root/uploaded"}, content=b"x"
    )
    assert uploaded.status_code in (200, 201, 204), uploaded.text
    script = (
        "touch /root/made; stat -c '%u %n' /usr/bin/apt-get /etc/passwd /root/made /root/uploaded;"
        " ls -n /proc/1/ | head -0; awk '{print $2}' /proc/self/uid_map"
    )
    code, out = serve.sh(sandbox, script)
    assert code == 0
    *owners, outside = out.splitlines()
    assert owners == [
        "0 /usr/bin/apt-get",
        "0 /etc/passwd",
        "0 /root/made",
        "0 /root/uploaded",
    ]
    assert int(outside) >= 65536


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
