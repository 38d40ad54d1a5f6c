"""What a process-runtime sandbox cannot reach, real programs in it, and where it cannot run."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio
from _process_runtime import described, host_bytes, netns_holders, no_bwrap_left, sh, until

from fake_server import FakeCreateOS, TransitionPolicy, VirtualClock
from fake_server.runtime.api import RuntimeUnavailable
from fake_server.runtime.pipes import StdinPipe
from fake_server.runtime.process import ProcessRuntime
from fake_server.runtime.process.containment import bwrap
from fake_server.runtime.process.net import hostcheck, netmode, netns
from fake_server.runtime.process.storage.rootdir import sweep

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture(name="runtime")
async def _runtime(tmp_path: Path) -> AsyncIterator[ProcessRuntime]:
    runtime = ProcessRuntime(base=tmp_path / "sandboxes")
    yield runtime
    runtime.close()
    assert await no_bwrap_left()
    assert list((tmp_path / "sandboxes").iterdir()) == []


@pytest.fixture(name="secret")
def _secret(tmp_path: Path) -> Path:
    """A host file no sandbox may read (like /etc/shadow)."""
    path = tmp_path / "host" / "shadow"
    path.parent.mkdir()
    path.write_text("host secret\n")
    return path


async def test_host_files_are_out_of_reach_by_path_dotdot_and_proc(
    runtime: ProcessRuntime, secret: Path
) -> None:
    machine = runtime.new_sandbox("sb")
    script = (
        f"cat {secret}; cat /proc/1/root{secret}; cat /../../..{secret}; "
        f"cat /proc/self/root/..{secret}; echo x > {secret}"
    )
    code, output = await sh(machine, script)
    assert "host secret" not in output
    assert output.count("No such file or directory") == 4
    assert "Directory nonexistent" in output
    assert host_bytes(secret) == b"host secret\n"
    assert code != 0


async def test_symlinks_to_host_paths_stay_inside_for_processes_and_the_files_api(
    runtime: ProcessRuntime, secret: Path
) -> None:
    machine = runtime.new_sandbox("sb")
    code, _ = await sh(machine, f"ln -s {secret} /tmp/link && ln -s ../../../../.. /tmp/up")
    assert code == 0
    with pytest.raises(FileNotFoundError):
        machine.disk.read_file("/tmp/link")
    with pytest.raises(FileNotFoundError):
        machine.disk.read_file(f"/tmp/up{secret}")
    machine.disk.write_file("/tmp/link", b"written")
    assert host_bytes(secret) == b"host secret\n"
    assert host_bytes(machine.root / str(secret).lstrip("/")) == b"written"


async def test_the_system_is_writable_copy_on_write_and_the_host_keeps_its_files(
    runtime: ProcessRuntime,
) -> None:
    machine, other = runtime.new_sandbox("sb"), runtime.new_sandbox("other")
    before = host_bytes("/etc/hostname")
    script = "touch /usr/x && echo evil > /etc/hostname && rm /usr/bin/env && cat /etc/hostname"
    assert await sh(machine, script) == (0, "evil\n")
    assert host_bytes("/etc/hostname") == before
    assert host_bytes("/usr/x") is None
    assert host_bytes("/usr/bin/env") is not None
    assert await sh(other, "cat /etc/hostname; ls /usr/x; env true && echo env") == (
        0,
        "sandbox\nls: cannot access '/usr/x': No such file or directory\nenv\n",
    )


async def test_what_the_host_keeps_personal_is_absent(runtime: ProcessRuntime) -> None:
    """The host's homes, /work, the fake's own state, credentials and users stay invisible."""
    machine = runtime.new_sandbox("sb")
    script = (
        "ls -A /root /home /tmp /srv /opt /mnt /usr/local/bin; ls -d /work /etc/shadow "
        f"{runtime.fake_root.path} /etc/ssh/ssh_host_rsa_key 2>&1 | sed 's/.*access //'; "
        "cut -d: -f3 /etc/passwd | sort -n | tail -1; ls -A /var/lib | grep -c postgresql"
    )
    code, output = await sh(machine, script)
    # the Debian 13 image's root has the shell's dotfiles, as a fresh VM's; the host's is empty
    image = runtime.system.root is not None
    dotfiles = ".bashrc\n.profile\n" if image else ""
    # the image's own users have an /etc/shadow (not the host's: checked below)
    missing, present = (
        ("", "/etc/shadow\n")
        if image
        else (
            "'/etc/shadow': No such file or directory\n",
            "",
        )
    )
    assert output == (
        f"/home:\n\n/mnt:\n\n/opt:\ncreateos\n\n/root:\n{dotfiles}\n/srv:\n\n/tmp:\n\n"
        "/usr/local/bin:\nbun\nbunx\n"
        "'/work': No such file or directory\n"
        f"{missing}"
        f"'{runtime.fake_root.path}': No such file or directory\n"
        "'/etc/ssh/ssh_host_rsa_key': No such file or directory\n"
        f"{present}"
        "65534\n0\n"
    )
    assert code == 1  # grep -c found nothing
    if image:
        _, own = await sh(machine, "cat /etc/shadow")
        assert own.startswith("root:")
        assert own != await asyncio.to_thread(Path("/etc/shadow").read_text)


async def test_sandboxes_see_neither_each_others_files_nor_processes(
    runtime: ProcessRuntime,
) -> None:
    first, second = runtime.new_sandbox("a"), runtime.new_sandbox("b")
    await sh(first, "echo mine > /tmp/a")
    stdin = StdinPipe()
    sleeper = asyncio.ensure_future(sh(first, "echo $$; exec cat", stdin=stdin))
    await until(lambda: bool(first.runs))
    [run] = first.runs.values()
    _code, output = await sh(
        second,
        f"cat /tmp/a {first.root}/tmp/a; kill -0 {run.pid}; ls /proc | grep -c '^[0-9]'",
    )
    assert "mine" not in output
    assert "No such process" in output
    assert int(output.splitlines()[-1]) <= 5  # its own init, sh, ls, grep (and a subshell)
    stdin.close()
    assert (await sleeper)[0] == 0


async def test_no_network_but_loopback_before_the_sandbox_has_an_address(
    runtime: ProcessRuntime,
) -> None:
    """Neither a public address nor a service on the host's loopback is reachable (the API
    gives every sandbox its address, and with it ``eth0``, at create)."""
    machine = runtime.new_sandbox("sb")
    with socket.create_server(("127.0.0.1", 0)) as host_service:
        port = host_service.getsockname()[1]
        program = (
            "import os, socket\n"
            "server = socket.socket(); server.bind(('127.0.0.1', 0)); server.listen()\n"
            "socket.create_connection(server.getsockname()).close(); print('loopback ok')\n"
            f"for address in [('1.1.1.1', 80), ('127.0.0.1', {port})]:\n"
            "    try:\n        socket.create_connection(address, timeout=5)\n"
            "    except OSError as exc:\n        print(exc.strerror)\n"
            "print(sorted(k for k in os.environ if 'proxy' in k.lower()))\n"
        )
        code, output = await sh(machine, f'python3 -c "{program}"')
    assert (code, output) == (
        0,
        "loopback ok\nNetwork is unreachable\nConnection refused\n[]\n",
    )


async def test_a_sandboxs_processes_share_one_network_namespace_released_at_destroy(
    runtime: ProcessRuntime,
) -> None:
    first, second = runtime.new_sandbox("a"), runtime.new_sandbox("b")
    fork = first.fork()
    inode = first.net.inode
    where = "readlink /proc/self/ns/net"
    assert await sh(first, where) == (0, f"{inode}\n")
    assert len({inode, second.net.inode, fork.net.inode}) == 3
    assert await sh(fork, where) == (0, f"{fork.net.inode}\n")
    init = first.guest.pid
    assert init is not None  # the sandbox's init holds it too (and its sleep)
    held = netns_holders(inode)
    assert f"{os.getpid()}/fd/{first.net.fileno}" in held
    assert str(init) in held
    first.destroy()
    assert first.net.closed
    # Nothing of the sandbox's holds it once destroy returns; a process the host forks at that
    # moment holds a copy of every descriptor until its exec closes them, so wait that out.
    try:
        await until(lambda: not netns_holders(inode), deadline=10.0)
    except AssertionError:
        raise AssertionError(f"still held by {described(netns_holders(inode))}") from None
    with pytest.raises(ConnectionRefusedError):
        first.net.socket()


def refused(*_args: int) -> int:
    raise PermissionError(1, "Operation not permitted")


async def test_without_root_sandboxes_get_a_network_per_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The real probe, as root here: a shared network, with a way out or not (nft may be
    # missing on a fresh machine: the README's install does not bring Debian packages).
    assert netmode.detect().shared
    monkeypatch.setattr(netns, "_unshare", refused)
    monkeypatch.setattr(netmode.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(netmode, "_route_missing", lambda: "")  # no pasta (a real user's trial)
    assert netmode.detect.__wrapped__() == netmode.NetworkMode("not root")
    monkeypatch.setattr(netmode.os, "geteuid", lambda: 0)  # root, yet refused (a seccomp jail)
    assert netmode.detect.__wrapped__() == netmode.NetworkMode(
        "a network namespace cannot be created: Operation not permitted"
    )
    assert netmode.detect().shared  # decided once: not probed again


async def test_without_nft_sandboxes_share_a_network_with_no_way_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fresh machine without nftables: the probe still gives the shared network, and says
    why there is no way out (what ``serve`` prints)."""
    monkeypatch.setattr(hostcheck.nft, "nft_path", lambda: None)
    mode = netmode.detect.__wrapped__()
    assert (mode.shared, mode.uplink_missing) == (True, hostcheck.NFT_MISSING)
    assert mode.describe() == (
        "process (sandboxes reach nothing past the fake: no NAT and no egress rules, since "
        "nftables' nft is not installed (apt-get install nftables); eth0, preview URLs and "
        "account networks work)"
    )


async def test_without_nsenter_sandboxes_get_a_network_per_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(netns.shutil, "which", lambda *_a, **_k: None)
    assert netmode.detect.__wrapped__() == netmode.NetworkMode("nsenter is missing")
    with pytest.raises(RuntimeUnavailable) as info:
        netns.nsenter_path()
    assert str(info.value) == (
        "a sandbox's processes need nsenter (util-linux) to share its network namespace, and "
        "it is not installed (apt-get install util-linux)"
    )


async def test_git_init_and_commit(runtime: ProcessRuntime) -> None:
    machine = runtime.new_sandbox("sb")
    script = (
        "cd /srv && git init -q repo && cd repo && echo hi > f && git add f && "
        "git -c user.email=a@b.c -c user.name=n commit -qm first && git log --format=%s"
    )
    assert await sh(machine, script) == (0, "first\n")


async def test_a_pipeline_moves_50_mib(runtime: ProcessRuntime) -> None:
    machine = runtime.new_sandbox("sb")
    script = "head -c 52428800 /dev/zero | tr '\\0' a | wc -c"
    assert await sh(machine, script) == (0, "52428800\n")


async def test_leftovers_of_a_killed_fake_are_removed_at_the_next_start(tmp_path: Path) -> None:
    base = tmp_path / "sandboxes"
    dead = base / "999999999-dead"
    (dead / "sb" / "tmp").mkdir(parents=True)
    (dead / "lock").write_text("999999999\n")
    live = base / f"{os.getpid()}-live"
    live.mkdir()
    fd = os.open(live / "lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"{os.getpid()}\n".encode())
    try:
        runtime = ProcessRuntime(base=base)
        assert runtime.fake_root.removed_leftovers == 1
        assert not dead.exists()
        assert live.exists()
        runtime.close()
    finally:
        os.close(fd)
    assert sweep(base) == 1  # the live one, once unlocked
    assert list(base.iterdir()) == []


async def test_a_fake_between_creating_its_lock_and_taking_it_is_left_alone(tmp_path: Path) -> None:
    """Its lock file exists, unlocked and still empty, and its process lives: not a leftover.
    (Removing it then left that fake serving from a deleted directory.)"""
    base = tmp_path / "sandboxes"
    starting = base / f"{os.getpid()}-starting"
    starting.mkdir(parents=True)
    (starting / "lock").touch()
    dead = base / "999999999-dead"
    dead.mkdir()
    (dead / "lock").touch()  # died in the same window: removed
    assert sweep(base) == 1
    assert [entry.name for entry in base.iterdir()] == [starting.name]


async def test_processes_still_running_from_a_leftover_are_killed_before_it_is_removed(
    tmp_path: Path,
) -> None:
    """Should a sandbox's process outlive a killed fake (killed before bwrap took
    ``--die-with-parent``), the next start ends it rather than leaving it running."""
    base = tmp_path / "sandboxes"
    sandbox = base / "999999999-dead" / "sb"
    sandbox.mkdir(parents=True)
    (sandbox.parent / "lock").write_text("999999999\n")
    script = "import time; print('up', flush=True); time.sleep(300)"
    argv = [sys.executable, "-c", script, "--bind", str(sandbox), "/"]
    # With a sandbox's bwrap arguments; once it prints, its command line is the new program's
    # (right after the fork it is still pytest's, which no sweep would recognise).
    stray = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE)
    try:
        assert stray.stdout is not None
        assert await stray.stdout.readline() == b"up\n"
        assert sweep(base) == 1
        # wait_for is a guard against a hang, not a timing check.
        assert await asyncio.wait_for(stray.wait(), timeout=30) == -signal.SIGKILL
    finally:
        if stray.returncode is None:
            stray.kill()
            await stray.wait()
    assert list(base.iterdir()) == []


async def test_asking_for_the_runtime_where_bwrap_cannot_run_fails_clearly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bwrap, "bwrap_path", lambda: "/nonexistent/bwrap")
    with pytest.raises(RuntimeUnavailable) as info:
        FakeCreateOS(runtime="process")
    assert str(info.value) == (
        "the process runtime cannot run here: bwrap cannot start: No such file or directory. "
        + bwrap.HELP
    )
    fake = FakeCreateOS()
    with pytest.raises(RuntimeUnavailable):
        fake.runtime = "process"
    assert fake.runtime == "bashkit"


async def test_a_failing_bwrap_reports_its_status() -> None:
    assert bwrap.check_bwrap("/bin/false") == "bwrap failed a trial run: exit status 1"


async def test_an_unknown_runtime_name_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"runtime must be one of bashkit, process, not 'vm'"):
        FakeCreateOS(runtime="vm")


async def test_a_rootfs_can_have_its_own_runtime() -> None:
    fake = FakeCreateOS(
        clock=VirtualClock(),
        transitions=TransitionPolicy.immediate(),
        rootfs_runtime={"python:3.12": "process"},
    )
    async with fake:
        account = fake.world.account_for_key(fake.api_key)
        assert account is not None
        from fake_server.models import SandboxSpec

        python = account.create_sandbox(SandboxSpec("s-1vcpu-1gb", "python:3.12", "eu"))
        devbox = account.create_sandbox(SandboxSpec("s-1vcpu-1gb", "devbox:1", "eu"))
        assert (python.machine.runtime, devbox.machine.runtime) == ("process", "bashkit")
    assert await no_bwrap_left()
