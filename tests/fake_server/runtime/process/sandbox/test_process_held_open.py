"""An exec whose background job keeps its output open explains itself in the journal.

``bash -c 'sleep 100 &'`` exits at once, but ``sleep`` holds the exec's stdout and stderr, so
the reply waits for it (as on the service). Before, a client saw only "no reply" until its own
timeout; now the journal names the holder (its pid inside the sandbox and its command line)
and the fix, half a second after the program exited.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import pytest
from _process_runtime import until

if TYPE_CHECKING:
    import httpx

    from fake_server import FakeCreateOS

#: Real programs: in the reliability step.
pytestmark = [pytest.mark.asyncio, pytest.mark.reliability]

MakeSandbox = Callable[..., Awaitable[str]]

HELD = re.compile(
    r"bash exited \(0\) but pid (\d+) \(sleep 1\.\d+\) still holds its stdout or stderr: the "
    r"output does not end, and the reply waits for it; redirect its output \(>/dev/null "
    r"2>&1\) or use setsid/nohup with >file"
)


def _notes(fake: FakeCreateOS) -> list[tuple[str | None, str | None, str]]:
    return [(e.sandbox_id, e.process_id, e.detail) for e in fake.journal.filter(kind="process")]


async def test_an_exec_held_open_by_its_background_job_says_who_holds_it(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    sleep = f"1.{os.getpid()}"
    script = f"echo started; sleep {sleep} & echo $! > /tmp/job"
    reply = asyncio.create_task(
        client.post(
            f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "bash", "args": ["-c", script]}
        )
    )
    await until(lambda: bool(_notes(fake)))  # said while the reply still waits
    assert not reply.done()
    [(said_in, process_id, text)] = _notes(fake)
    match = HELD.fullmatch(text)
    assert match is not None, text
    assert (said_in, process_id) == (sandbox_id, None)
    result = (await asyncio.wait_for(reply, 20)).json()["data"]["result"]
    assert result["stdout"] == "started\n"
    job = await client.get(f"/v1/sandboxes/{sandbox_id}/files", params={"path": "/tmp/job"})
    assert job.content.decode().strip() == match.group(1)  # the pid the sandbox sees


async def test_a_managed_process_held_open_names_its_process(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    sandbox_id = await make_sandbox()
    created = await client.post(
        f"/v1/sandboxes/{sandbox_id}/processes",
        json={"cmd": "/bin/bash", "args": ["-c", f"sleep 1.{os.getpid()} &"]},
    )
    assert created.status_code == 201, created.text
    process_id = created.json()["data"]["process_id"]
    await until(lambda: bool(_notes(fake)))
    [(said_in, said_of, text)] = _notes(fake)
    assert (said_in, said_of) == (sandbox_id, process_id)
    assert HELD.fullmatch(text) is not None, text


async def test_a_job_that_lets_go_of_the_output_is_not_named(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    """The fix the note gives: a detached job with its output elsewhere; the reply comes at
    once and nothing is said."""
    sandbox_id = await make_sandbox()
    script = "setsid nohup sleep 30 >/tmp/out 2>&1 < /dev/null & echo done"
    reply = await client.post(
        f"/v1/sandboxes/{sandbox_id}/exec", json={"cmd": "bash", "args": ["-c", script]}
    )
    assert reply.json()["data"]["result"]["stdout"] == "done\n"
    assert _notes(fake) == []


async def test_a_kill_reaches_the_job_holding_the_output_at_once(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: MakeSandbox
) -> None:
    """The job holding the output belongs to the process: SIGTERM reaches it with the rest of
    the tree, so the kill does not wait out its grace period for the SIGKILL."""
    sandbox_id = await make_sandbox()
    base = f"/v1/sandboxes/{sandbox_id}/processes"
    sleep = f"1000.{os.getpid()}"
    created = await client.post(base, json={"cmd": "/bin/bash", "args": ["-c", f"sleep {sleep} &"]})
    process_id = created.json()["data"]["process_id"]
    await until(lambda: bool(_notes(fake)))
    killed = await asyncio.wait_for(
        client.delete(f"{base}/{process_id}", params={"grace_ms": 600_000}), 20
    )
    assert killed.status_code == 200, killed.text
    assert _running("sleep", sleep) == []


def _running(argv0: str, arg: str) -> list[int]:
    wanted = f"{argv0}\0{arg}\0".encode()
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                    if handle.read() == wanted:
                        found.append(int(entry.name))
            except OSError:
                continue
    return found
