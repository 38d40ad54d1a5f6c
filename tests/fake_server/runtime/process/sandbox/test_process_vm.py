"""The process runtime's process model is a VM's: daemons outlive the exec that started them.

An exec ends when its command has exited and its stdout and stderr reached end of file; what
it detached keeps running until the sandbox goes; pause freezes it, destroy kills it (SIGTERM,
then SIGKILL after a grace), fork copies files only; ``ps`` shows every process.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

import pytest
from _process_runtime import api_sh, machine, netns_holders, until

from fake_server.runtime.process.storage import rootdir

if TYPE_CHECKING:
    import httpx

    from fake_server import FakeCreateOS
    from fake_server.runtime.process import ProcessMachine

#: Slow (subprocesses, real programs): in the reliability step, keeping the main suite fast.
pytestmark = [pytest.mark.reliability, pytest.mark.asyncio]

DAEMON = "nohup setsid sleep 313 >/tmp/log 2>&1 &"


def sleeps(found: ProcessMachine, seconds: int) -> list[int]:
    """Host pids of the sandbox's ``sleep SECONDS`` processes."""
    pids = []
    for pid in found.guest.processes():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if handle.read() == f"sleep\0{seconds}\0".encode():
                    pids.append(pid)
        except OSError:
            continue
    return pids


def state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        data = handle.read()
    return data[data.rfind(b")") + 2 :].split()[0].decode()


async def test_a_detached_daemon_outlives_its_exec_and_ps_shows_it(
    client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox()
    assert await api_sh(client, sandbox_id, f"{DAEMON} echo started") == {
        "exit_code": 0, "stdout": "started\n", "stderr": "", "error": "",
    }  # fmt: skip
    # The daemon's own command line: every sandbox's init keeps a "sleep 2147483647" too.
    script = "until pgrep -fx 'sleep 313' >/dev/null; do :; done; ps -eo args"
    listed = await api_sh(client, sandbox_id, script)
    assert "sleep 313" in listed["stdout"].splitlines()
    assert (await api_sh(client, sandbox_id, "pkill -x sleep; kill -9 -1; echo alive"))[
        "stdout"
    ] == "alive\n"
    # pid 1 is shielded from signals sent inside: the sandbox keeps serving
    assert (await api_sh(client, sandbox_id, "echo still"))["stdout"] == "still\n"


async def test_a_server_started_with_the_tutorials_pattern_answers_the_next_exec(
    client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox()
    start = "nohup setsid python3 -m http.server 8080 >/tmp/server.log 2>&1 &"
    assert (await api_sh(client, sandbox_id, start))["exit_code"] == 0
    probe = (
        "for i in $(seq 500); do (echo > /dev/tcp/127.0.0.1/8080) 2>/dev/null && exit 0; "
        "sleep 0.02; done; exit 1"
    )  # as waitForPortReady probes
    assert (await api_sh(client, sandbox_id, probe))["exit_code"] == 0


async def test_a_background_job_holding_the_pipes_keeps_the_exec_until_it_is_cut(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox()
    found = machine(fake, sandbox_id)
    exec_task = asyncio.ensure_future(api_sh(client, sandbox_id, "sleep 314 & echo bg"))
    await until(lambda: bool(sleeps(found, 314)))
    [job] = sleeps(found, 314)
    await until(lambda: not found.runs or all(_gone(r.pid) for r in found.runs.values()))
    assert not exec_task.done()  # the shell exited; its job still holds stdout and stderr
    exec_task.cancel()  # the client goes: the exec and its job are killed
    with pytest.raises(asyncio.CancelledError):
        await exec_task
    await until(lambda: _gone(job))
    assert (await api_sh(client, sandbox_id, "echo next"))["stdout"] == "next\n"


def _gone(pid: int) -> bool:
    try:
        return state(pid) == "Z"
    except OSError:
        return True


async def test_pause_freezes_daemons_and_resume_thaws_them(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox()
    await api_sh(client, sandbox_id, DAEMON)
    found = machine(fake, sandbox_id)
    await until(lambda: len(sleeps(found, 313)) == 1)  # setsid and nohup exec it soon after
    [daemon] = sleeps(found, 313)
    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/pause")).status_code in (200, 202)
    await until(lambda: state(daemon) == "T")  # the kernel delivers SIGSTOP
    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/resume")).status_code in (200, 202)
    await until(lambda: state(daemon) != "T")


async def test_fork_copies_files_not_processes(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox()
    await api_sh(client, sandbox_id, f"echo kept > /tmp/f; {DAEMON}")
    await until(lambda: len(sleeps(machine(fake, sandbox_id), 313)) == 1)
    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/pause")).status_code in (200, 202)
    forked = await client.post(f"/v1/sandboxes/{sandbox_id}/fork", json={})
    assert forked.status_code in (200, 202), forked.text
    child_id = forked.json()["data"]["id"]
    for _ in range(10):
        if (await client.get(f"/v1/sandboxes/{child_id}")).json()["data"]["status"] == "running":
            break
    result = await api_sh(client, child_id, "cat /tmp/f; ps -eo args | grep -c '^sleep 313'")
    assert result["stdout"] == "kept\n0\n"
    assert len(sleeps(machine(fake, sandbox_id), 313)) == 1


async def test_destroy_kills_a_daemon_that_ignores_sigterm_and_leaves_nothing(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox()
    stubborn = "nohup setsid sh -c 'trap \"\" TERM; sleep 313' >/dev/null 2>&1 &"
    await api_sh(client, sandbox_id, f"{stubborn} {DAEMON}")
    found = machine(fake, sandbox_id)
    await until(lambda: len(sleeps(found, 313)) == 2)
    init = found.guest.pid
    assert init is not None
    pids = [init, *found.guest.processes()]
    inode = os.readlink(f"/proc/{init}/ns/net")
    assert (await client.delete(f"/v1/sandboxes/{sandbox_id}")).status_code in (200, 202)
    await until(lambda: all(_gone(pid) for pid in pids))
    await until(lambda: netns_holders(inode) == [])
    assert not found.root.exists()
    assert rootdir.processes_naming(os.fsencode(found.root)) == []


async def test_reset_ends_every_daemon(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox()
    await api_sh(client, sandbox_id, DAEMON)
    found = machine(fake, sandbox_id)
    await until(lambda: len(sleeps(found, 313)) == 1)
    pids = [found.guest.pid, *found.guest.processes()]
    fake.reset()
    await until(lambda: all(_gone(pid) for pid in pids if pid is not None))
    assert not found.root.exists()


SELF = (
    "import sys, urllib.request\n"
    "url = 'http://127.0.0.1:1029/self/' + sys.argv[1]\n"
    "request = urllib.request.Request(url, method='POST')\n"
    "print(urllib.request.urlopen(request).status)\n"
)


async def test_the_agent_pauses_its_own_sandbox_and_journals_the_reason(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox()
    reason = "r" * 200
    fake.sandbox(sandbox_id).disk.write_file("/tmp/self.py", SELF.encode())
    call = f"python3 /tmp/self.py 'pause?reason={reason}' >/tmp/out 2>&1"
    await api_sh(client, sandbox_id, f'nohup setsid sh -c "{call}" >/dev/null 2>&1 &')
    await until(lambda: fake.sandbox(sandbox_id).status in ("pausing", "paused"))
    assert (await client.post(f"/v1/sandboxes/{sandbox_id}/resume")).status_code in (200, 202)
    script = "until [ -s /tmp/out ]; do sleep 0.01; done; cat /tmp/out"
    assert (await api_sh(client, sandbox_id, script))["stdout"] == "202\n"
    [event] = fake.journal.filter(kind="agent", sandbox_id=sandbox_id)
    assert (event.operation, event.body) == ("self_pause", "r" * 128)
    assert len(fake.calls.filter("pause_sandbox", sandbox_id=sandbox_id)) == 0  # no API call


async def test_the_agent_deletes_its_own_sandbox(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox()
    fake.sandbox(sandbox_id).disk.write_file("/tmp/self.py", SELF.encode())
    result = await api_sh(client, sandbox_id, "python3 /tmp/self.py delete; sleep 30")
    assert result["error"] == "command killed by SIGTERM"
    assert fake.sandbox(sandbox_id).status in ("destroying", "destroyed")
    [event] = fake.journal.filter(kind="agent", sandbox_id=sandbox_id)
    assert (event.operation, event.body) == ("self_delete", None)


async def test_the_agent_answers_only_its_two_routes_and_only_inside(
    client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox()
    probe = (
        "curl -s -o /dev/null -w '%{http_code} ' http://127.0.0.1:1029/self/pause; "
        "curl -s -o /dev/null -w '%{http_code} ' -X POST http://127.0.0.1:1029/self/reboot; "
        "curl -s -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:1029/"
    )
    assert (await api_sh(client, sandbox_id, probe))["stdout"] == "405 404 404"
    with pytest.raises(OSError):  # the host's loopback: nothing listens there
        await asyncio.open_connection("127.0.0.1", 1029)
