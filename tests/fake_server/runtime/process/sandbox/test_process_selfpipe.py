"""``/run/self`` on the process runtime: the FIFO the official CLI falls back to when the
agent's HTTP port is not there (NodeOps-app/createos-cli ``cmd/sandbox/self.go``:
``selfFifoPath = "/run/self"``; ``selfSignalFIFO`` writes ``park`` or ``retire`` and a
newline; its help: ``echo park > /run/self``)."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any

import pytest
from _process_runtime import api_sh, machine, until

if TYPE_CHECKING:
    import httpx

    from fake_server import FakeCreateOS

#: Slow (subprocesses, real programs): in the reliability step, keeping the main suite fast.
pytestmark = [pytest.mark.reliability, pytest.mark.asyncio]


def agent_events(fake: FakeCreateOS, sandbox_id: str) -> list[tuple[str | None, str | None]]:
    return [(e.operation, e.body) for e in fake.journal.filter(kind="agent", sandbox_id=sandbox_id)]


async def test_park_pauses_the_sandbox_as_the_cli_writes_it(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox()
    listing = await api_sh(client, sandbox_id, "stat -c '%F %a' /run/self")
    assert listing == {
        "exit_code": 0,
        "stdout": "fifo 622\n",
        "stderr": "",
        "error": "",
    }
    await api_sh(client, sandbox_id, "nohup setsid sh -c 'echo park > /run/self' >/dev/null 2>&1 &")
    await until(lambda: fake.sandbox(sandbox_id).status in ("pausing", "paused"))
    assert agent_events(fake, sandbox_id) == [("self_pause", None)]  # the pipe takes no reason
    assert len(fake.calls.filter("pause_sandbox", sandbox_id=sandbox_id)) == 0  # no API call


async def test_retire_destroys_the_sandbox_and_other_lines_do_nothing(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Any
) -> None:
    sandbox_id = await make_sandbox()
    ignored = await api_sh(client, sandbox_id, "printf 'reboot\\nPARK\\n\\n' > /run/self; echo ok")
    assert ignored["stdout"] == "ok\n"
    assert fake.sandbox(sandbox_id).status == "running"
    assert agent_events(fake, sandbox_id) == []
    result = await api_sh(client, sandbox_id, "echo retire > /run/self; sleep 30")
    assert result["error"] == "command killed by SIGTERM"
    assert fake.sandbox(sandbox_id).status in ("destroying", "destroyed")
    assert agent_events(fake, sandbox_id) == [("self_delete", None)]


async def test_a_link_planted_at_run_self_is_replaced_not_followed(
    fake: FakeCreateOS, client: httpx.AsyncClient, make_sandbox: Any, tmp_path: Any
) -> None:
    """The pipe is made inside the sandbox's root before its first process: a link at
    ``/run/self`` pointing at a host path is replaced, and the host file stays as it was."""
    victim = tmp_path / "victim"
    victim.write_text("host file\n")
    sandbox_id = await make_sandbox()
    found = machine(fake, sandbox_id)
    found.disk.make_dirs("/run")
    os.symlink(str(victim), os.path.join(found.disk.root, "run", "self"))
    assert (await api_sh(client, sandbox_id, "stat -c %F /run/self"))["stdout"] == "fifo\n"
    assert victim.read_text() == "host file\n"
    assert stat.S_ISREG(victim.stat().st_mode)
