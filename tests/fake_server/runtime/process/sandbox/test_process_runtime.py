"""The process runtime over HTTP: exec, streams, managed processes, signals, files, lifecycle."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pytest
from _process_runtime import machine, no_bwrap_left, until

from fake_server.runtime.process import DISKS_NEED_ROOT, ProcessRuntime
from fake_server.runtime.process.images import system
from fake_server.runtime.process.net import bridges
from fake_server.runtime.process.sandbox import tree
from tests._helpers import S3_DISK

if TYPE_CHECKING:
    import httpx

    from fake_server import FakeCreateOS

pytestmark = pytest.mark.asyncio

MakeSandbox = Callable[..., Awaitable[str]]


async def run(client: httpx.AsyncClient, sandbox_id: str, **body: Any) -> dict[str, Any]:
    response = await client.post(f"/v1/sandboxes/{sandbox_id}/exec", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["data"]["result"]
    return result


async def test_exec_returns_status_streams_cwd_env_stdin_and_user(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox(envs={"GREETING": "hello"})
    script = 'echo "$GREETING"; cat; echo oops >&2; pwd; id -un; hostname; exit 3'
    result = await run(
        client, sandbox_id, cmd="/bin/bash", args=["-c", script], stdin="piped\n",
        env={"GREETING": "hi"}, cwd="/tmp",
    )  # fmt: skip
    assert result == {
        "exit_code": 3,
        "stdout": "hi\npiped\n/tmp\nroot\nsandbox\n",
        "stderr": "oops\n",
        "error": "",
    }


async def test_exec_of_a_program_that_cannot_start_sets_the_result_s_error(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    """TS ``ExecResult.error`` ("the command could not be started"), the CLI's
    ``cmd/sandbox/exec.go`` (prints ``result.error``); the status keeps the shell's 127/126."""
    sandbox_id = await make_sandbox()
    result = await run(client, sandbox_id, cmd="no-such-tool", args=["x"])
    assert result == {
        "exit_code": 127,
        "stdout": "",
        "stderr": "",
        "error": 'exec: "no-such-tool": executable file not found in $PATH',
    }
    directory = await run(client, sandbox_id, cmd="/tmp")
    assert (directory["exit_code"], directory["error"]) == (
        126,
        "fork/exec /tmp: permission denied",
    )


async def test_exec_in_a_missing_directory_is_a_clear_400(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "true", "cwd": "/nowhere"}
    )
    assert response.status_code == 400
    assert response.json()["data"] == {"cwd": "directory does not exist"}


async def test_python_streams_each_line_as_it_runs(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    """The second line waits for a file the test writes only after it saw the first one."""
    sandbox_id = await make_sandbox()
    program = (
        "import os, time\nprint('ready', flush=True)\n"
        "while not os.path.exists('/tmp/go'):\n    time.sleep(0.005)\nprint('done')\n"
    )
    seen: list[str] = []
    async with (
        client.stream(
            "POST",
            f"/v1/sandboxes/{sandbox_id}/exec?stream=true",
            json={"cmd": "python3", "args": ["-c", program]},
        ) as response,
        asyncio.timeout(20),
    ):
        async for line in response.aiter_lines():
            frame = json.loads(line)
            if "stdout" in frame:
                seen.append(frame["stdout"])
                if frame["stdout"] == "ready\n":
                    put = await client.put(
                        f"/v1/sandboxes/{sandbox_id}/files", params={"path": "/tmp/go"}, content=b""
                    )
                    assert put.status_code in (200, 201), put.text
            if "exit_code" in frame:
                seen.append(f"exit {frame['exit_code']}")
    assert seen == ["ready\n", "done\n", "exit 0"]


async def process(client: httpx.AsyncClient, sandbox_id: str, script: str) -> str:
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/processes",
        json={"cmd": "/bin/bash", "args": ["-c", script]},
    )
    assert response.status_code == 201, response.text
    process_id: str = response.json()["data"]["process_id"]
    return process_id


async def test_managed_process_reads_live_stdin_before_it_is_closed(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    base = f"/v1/sandboxes/{sandbox_id}/processes"
    process_id = await process(client, sandbox_id, "read line; echo got:$line; cat")
    sent = await client.post(f"{base}/{process_id}/input", json={"data_base64": "Zmlyc3QK"})
    assert sent.status_code == 200, sent.text  # "first\n"
    assert await _first_output(client, f"{base}/{process_id}") == b"got:first\n"
    await client.post(f"{base}/{process_id}/input", json={"data_base64": "cmVzdAo="})
    await client.post(f"{base}/{process_id}/stdin/close")
    waited = await client.get(f"{base}/{process_id}/wait", params={"timeout_ms": 10_000})
    assert waited.json()["data"]["exit_code"] == 0


async def test_kill_honours_trap_then_kills_the_tree_after_grace(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    base = f"/v1/sandboxes/{sandbox_id}/processes"
    process_id = await process(client, sandbox_id, "trap '' TERM; sleep 300 & echo up; wait")
    await _first_output(client, f"{base}/{process_id}")
    [run] = machine(fake, sandbox_id).runs.values()
    command = tree.descendants(run.pid)[run.wrappers :]  # below the seccomp filter's bwrap
    assert len([p for level in command for p in level]) == 2  # bash, sleep
    killed = await client.delete(f"{base}/{process_id}", params={"grace_ms": 100})
    data = killed.json()["data"]
    assert (data["exit_code"], data["signal"]) == (None, "SIGKILL")
    assert tree.descendants(run.pid) == []


async def test_kill_of_a_plain_program_ends_it_with_sigterm(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    base = f"/v1/sandboxes/{sandbox_id}/processes"
    process_id = await process(client, sandbox_id, "echo up; exec sleep 300")
    await _first_output(client, f"{base}/{process_id}")
    killed = await client.delete(f"{base}/{process_id}", params={"grace_ms": 10_000})
    assert killed.json()["data"]["signal"] == "SIGTERM"


async def test_a_process_starting_when_the_fake_stops_is_killed_as_it_runs(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    """The stop's kill reaches a process whose bwrap was still starting (it was not among the
    runs yet): its exec is answered at once instead of holding the stop."""
    sandbox_id = await make_sandbox()
    fake.runtimes.kill_processes()  # a stop begins, before this exec's process has started
    result = await run(client, sandbox_id, cmd="sleep", args=["300"])
    assert (result["exit_code"], result["error"]) == (137, "command killed by SIGKILL")
    assert machine(fake, sandbox_id).runs == {}


async def test_signal_reaches_the_program_which_may_handle_it(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    base = f"/v1/sandboxes/{sandbox_id}/processes"
    script = "trap 'echo bye; exit 5' USR1; echo up; while :; do sleep 0.01; done"
    process_id = await process(client, sandbox_id, script)
    await _first_output(client, f"{base}/{process_id}")
    sent = await client.post(f"{base}/{process_id}/signal", json={"signal": "SIGUSR1"})
    assert sent.status_code == 200, sent.text
    waited = await client.get(f"{base}/{process_id}/wait", params={"timeout_ms": 10_000})
    assert (waited.json()["data"]["exit_code"], waited.json()["data"]["signal"]) == (5, None)


async def _first_output(client: httpx.AsyncClient, url: str) -> bytes:
    """The first output frame's bytes (a bound of 20 real seconds turns a hang into a failure)."""
    async with asyncio.timeout(20), client.stream("GET", f"{url}/connect") as response:
        async for line in response.aiter_lines():
            frame = json.loads(line)
            if frame["type"] == "data":
                return base64.b64decode(frame["data_base64"])
    raise AssertionError("the process ended without output")


async def test_files_api_works_on_the_sandbox_directory(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    files = f"/v1/sandboxes/{sandbox_id}/files"
    put = await client.put(files, params={"path": "/srv/app/in.txt"}, content=b"data")
    assert put.status_code in (200, 201)
    result = await run(client, sandbox_id, cmd="sh", args=["-c", "cat /srv/app/in.txt > /root/out"])
    assert result["exit_code"] == 0
    assert (await client.get(files, params={"path": "/root/out"})).content == b"data"
    assert (machine(fake, sandbox_id).root / "root" / "out").read_bytes() == b"data"


async def test_pause_stops_every_process_and_resume_continues_them(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    base = f"/v1/sandboxes/{sandbox_id}/processes"
    process_id = await process(client, sandbox_id, "sleep 300 & echo up; wait")
    await _first_output(client, f"{base}/{process_id}")
    [nsenter] = [run.pid for run in machine(fake, sandbox_id).runs.values()]
    tree_pids = [p for level in tree.descendants(nsenter) for p in level]
    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/pause")).status_code == 200
    await until(lambda: {_state(pid) for pid in tree_pids} == {"T"})  # SIGSTOP lands at once
    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/resume")).status_code == 200
    await until(lambda: "T" not in {_state(pid) for pid in tree_pids})


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        data = handle.read()
    return data[data.rfind(b")") + 2 :].split()[0].decode()


async def test_fork_copies_the_files_and_then_goes_its_own_way(
    fake: FakeCreateOS, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    original = machine(fake, sandbox_id)
    original.disk.write_file("/root/a", b"one")
    copy = original.fork()
    copy.disk.write_file("/root/a", b"two")
    assert (original.disk.read_file("/root/a"), copy.disk.read_file("/root/a")) == (
        b"one",
        b"two",
    )
    copy.destroy()
    assert not copy.directory.exists()


async def test_a_fork_copied_off_the_loop_is_registered_or_gone_with_its_request(
    fake: FakeCreateOS, make_sandbox: MakeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fork_async`` copies in a worker thread; the fork is among the runtime's machines once
    made, and a request cancelled meanwhile leaves none: its copy is destroyed once made."""
    original = machine(fake, (await make_sandbox()))
    original.disk.write_file("/root/a", b"one")
    copy = await original.fork_async()
    assert copy.disk.read_file("/root/a") == b"one"
    assert copy in original._owner.machines.values()  # type: ignore[attr-defined]
    copy.destroy()
    started, release = threading.Event(), threading.Event()
    owner = original._owner  # type: ignore[attr-defined]
    plain = owner._make

    made: list[Any] = []

    def held(*args: Any) -> Any:
        started.set()
        release.wait(30)
        made.append(plain(*args))
        return made[-1]

    monkeypatch.setattr(owner, "_make", held)
    before = dict(owner.machines)
    directories = original.directory.parent
    listed = set(directories.iterdir())
    request = asyncio.ensure_future(original.fork_async())
    await asyncio.to_thread(started.wait, 30)
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request
    release.set()
    await until(lambda: bool(made) and not made[0].directory.exists())  # made, then destroyed
    assert set(directories.iterdir()) == listed
    assert owner.machines == before


async def test_a_fork_whose_copy_fails_after_its_request_went_leaves_nothing(
    fake: FakeCreateOS, make_sandbox: MakeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request is cancelled during the copy, which then fails midway: what it left is
    removed once it ended, and no machine is registered."""
    original = machine(fake, (await make_sandbox()))
    owner = original._owner  # type: ignore[attr-defined]
    directories = original.directory.parent
    listed = set(directories.iterdir())
    started, release = threading.Event(), threading.Event()

    def half_made(directory: Any, *args: Any) -> Any:
        (directory / "upper").mkdir(parents=True)  # what a copy stopped midway leaves
        started.set()
        release.wait(30)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(owner, "_make", half_made)
    request = asyncio.ensure_future(original.fork_async())
    await asyncio.to_thread(started.wait, 30)
    assert set(directories.iterdir()) != listed  # the half-made copy is there meanwhile
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request
    release.set()
    await until(lambda: set(directories.iterdir()) == listed)
    assert list(owner.machines.values()) == [original]


async def test_a_fork_whose_copy_fails_leaves_nothing(
    fake: FakeCreateOS, make_sandbox: MakeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = machine(fake, (await make_sandbox()))
    owner = original._owner  # type: ignore[attr-defined]
    directories = original.directory.parent
    listed = set(directories.iterdir())

    def half_made(directory: Any, *args: Any) -> Any:
        (directory / "upper").mkdir(parents=True)  # what a copy stopped midway leaves
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(owner, "_make", half_made)
    with pytest.raises(OSError, match="No space left"):
        await original.fork_async()
    assert set(directories.iterdir()) == listed
    assert list(owner.machines.values()) == [original]


async def test_destroy_kills_every_tree_and_removes_the_directory(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    await process(client, sandbox_id, "trap '' TERM; sleep 300 & wait")
    exec_task = asyncio.ensure_future(run(client, sandbox_id, cmd="sleep", args=["300"]))
    found = machine(fake, sandbox_id)
    await until(lambda: len(found.runs) == 2)
    deleted = await client.delete(f"/v1/sandboxes/{sandbox_id}")
    assert deleted.status_code == 200
    result = await exec_task  # SIGTERM first: sleep ends on it
    assert (result["exit_code"], result["error"]) == (143, "command killed by SIGTERM")
    assert not found.directory.exists()
    assert await no_bwrap_left()


async def test_reset_removes_every_sandbox_directory(
    fake: FakeCreateOS, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    root = machine(fake, sandbox_id).directory
    fake.reset()
    assert not root.exists()
    assert fake.runtime == "process"


async def test_a_pty_without_setsid_on_the_host_is_a_clear_501(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: MakeSandbox,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fake_server.runtime.process.sandbox import pty

    sandbox_id = await make_sandbox()
    monkeypatch.setattr(pty, "SETSID", None)
    response = await client.post(
        f"/v1/sandboxes/{sandbox_id}/processes", json={"pty": {"rows": 24, "cols": 80}}
    )
    assert response.status_code == 501
    assert response.json()["message"] == (
        "a PTY on the fake's process runtime needs util-linux setsid in /usr, not found here; "
        "install util-linux or create this sandbox on the bashkit runtime for a PTY"
    )
    assert fake.sandbox(sandbox_id).processes == {}


async def test_disks_on_the_host_directory_layout_are_a_clear_409_and_leave_nothing(
    fake: FakeCreateOS, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a root file system of its own (not root) a sandbox has no mount namespace to
    bind a disk into: 409, and nothing is left of a create asking for one."""
    runtime = fake.runtimes.get("process")
    assert isinstance(runtime, ProcessRuntime)
    monkeypatch.setattr(runtime, "system", system.System(missing="not root"))
    disk = await client.post(
        "/v1/disks",
        json=S3_DISK,
    )
    assert disk.status_code in (200, 201), disk.text
    disk_id = disk.json()["data"]["id"]
    mount = {"disk_id": disk_id, "mount_path": "/mnt/data"}
    created = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "disks": [mount]})
    refusal = {"code": "runtime_unsupported", "message": DISKS_NEED_ROOT}
    assert (created.status_code, created.json()["data"]) == (409, refusal)
    assert fake.sandboxes() == []
    sandbox = await client.post("/v1/sandboxes", json={"shape": "s-1vcpu-1gb"})
    sandbox_id = sandbox.json()["data"]["id"]
    attached = await client.post(f"/v1/sandboxes/{sandbox_id}/disks", json=mount)
    assert (attached.status_code, attached.json()["data"]) == (409, refusal)
    listed = await client.get(f"/v1/sandboxes/{sandbox_id}/disks")
    assert listed.json()["data"]["data"] == []


async def test_a_host_without_ip_refuses_network_attach_clearly_and_keeps_nothing(
    fake: FakeCreateOS,
    client: httpx.AsyncClient,
    make_sandbox: MakeSandbox,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing() -> str:
        raise FileNotFoundError("iproute2's ip is not installed (apt-get install iproute2)")

    monkeypatch.setattr(bridges, "ip_path", missing)
    network_id = (await client.post("/v1/networks", json={"name": "n"})).json()["data"]["id"]
    sandbox_id = await make_sandbox()
    refused = await client.post(f"/v1/sandboxes/{sandbox_id}/networks", json={"id": network_id})
    assert refused.status_code == 409
    assert refused.json()["data"] == {
        "code": "runtime_unsupported",
        "message": "this host cannot connect the sandbox to the network (iproute2's ip is not "
        "installed (apt-get install iproute2)); use the bashkit runtime",
    }
    got = (await client.get(f"/v1/networks/{network_id}")).json()["data"]
    assert got["members"] == []
    assert machine(fake, sandbox_id).wiring.networks == {}
    before = (await client.get("/v1/sandboxes")).json()["data"]
    at_create = await client.post(
        "/v1/sandboxes", json={"shape": "s-1vcpu-1gb", "networks": [{"id": network_id}]}
    )
    assert at_create.status_code == 409
    assert at_create.json()["data"]["code"] == "runtime_unsupported"
    assert (await client.get("/v1/sandboxes")).json()["data"] == before  # nothing half-made
    runtime = fake.runtimes.get("process")
    assert isinstance(runtime, ProcessRuntime)
    assert runtime.hubs == {}
    assert sorted(runtime.machines) == [sandbox_id]
    assert (await client.delete(f"/v1/networks/{network_id}")).status_code == 200


async def test_a_pty_process_output_is_read_to_its_end_however_slow_the_reader(
    fake: FakeCreateOS, make_sandbox: MakeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PTY is drained until no process holds it, not for a while after the exit: the
    output waiting when the program ended was dropped once its reader took longer than
    ``_DRAIN_SECONDS`` (here none at all)."""
    from fake_server.runtime.process.sandbox import pty
    from fake_server.runtime.terminal import Terminal

    monkeypatch.setattr(pty, "_DRAIN_SECONDS", 0.0)
    runner = machine(fake, await make_sandbox()).runner(fake.clock)
    received: list[bytes] = []

    async def slow_reader(data: bytes) -> None:
        for _ in range(3):
            await asyncio.sleep(0)
        received.append(data)

    code = await runner.run(
        ["/bin/bash", "-c", "seq 1 3000"],
        on_stdout=slow_reader,
        on_stderr=slow_reader,
        terminal=Terminal(24, 80),
    )
    assert code == 0
    assert b"".join(received) == b"".join(b"%d\r\n" % i for i in range(1, 3001))


async def test_a_resize_the_disk_cannot_take_while_mounted_is_a_409_saying_why(
    client: httpx.AsyncClient, make_sandbox: MakeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fake_server.runtime.process.storage import diskimage

    monkeypatch.setattr(diskimage, "grows_online", lambda: False)
    sandbox_id = await make_sandbox()
    assert (await run(client, sandbox_id, cmd="true"))["exit_code"] == 0  # the disk is made
    too_far = diskimage.HEADROOM_MIB + 1
    response = await client.post(f"/v1/sandboxes/{sandbox_id}/resize", json={"disk_mib": too_far})
    assert response.status_code == 409
    assert response.json()["data"] == {
        "code": "runtime_unsupported",
        "message": f"the disk can grow to at most {diskimage.HEADROOM_MIB} MiB while its "
        "sandbox runs: growing an ext4 disk in use needs CAP_SYS_RESOURCE, which this host "
        "withholds from the fake",
    }
    got = await client.get(f"/v1/sandboxes/{sandbox_id}")
    assert got.json()["data"]["disk_mib"] == 10240  # unchanged
