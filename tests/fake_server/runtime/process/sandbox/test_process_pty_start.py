"""A resize that lands while a PTY command is starting is not lost. The official CLI sends its
window in a resize frame right after the shell's 101 (``cmd/sandbox/shell.go``
``runShellPTY``/``sendResize``), while the fake is still starting the shell: before, the size
changed after the PTY's window was set and before anyone listened, and the shell kept 24x80."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from _process_runtime import machine

from fake_server import VirtualClock
from fake_server.runtime.process.sandbox import pty
from fake_server.runtime.terminal import Terminal

if TYPE_CHECKING:
    from fake_server import FakeCreateOS

#: Slow (subprocesses, real programs): in the reliability step, keeping the main suite fast.
pytestmark = [pytest.mark.reliability, pytest.mark.asyncio]


async def test_a_resize_while_the_command_starts_reaches_its_window(
    fake: FakeCreateOS, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = machine(fake, _create(fake))
    terminal = Terminal(24, 80)
    first = pty.set_size

    def set_then_resize(fd: int, rows: int, cols: int) -> None:
        first(fd, rows, cols)
        monkeypatch.setattr(pty, "set_size", first)
        terminal.resize(40, 120)  # the CLI's frame, between the window and the listener

    monkeypatch.setattr(pty, "set_size", set_then_resize)
    output: list[bytes] = []

    async def sink(data: bytes) -> None:
        output.append(data)

    code = await found.runner(VirtualClock()).run(
        ["stty", "size"], on_stdout=sink, on_stderr=sink, terminal=terminal
    )
    assert (code, b"".join(output)) == (0, b"40 120\r\n")


def _create(fake: FakeCreateOS) -> str:
    from fake_server.models import SandboxSpec

    account = fake.world.account_for_key(fake.api_key)
    assert account is not None
    return account.create_sandbox(SandboxSpec("s-1vcpu-1gb", "", "")).id
