"""The PTY half of the runtime parity suite: window size (``stty size``) at start and after the
resize API, echo, Ctrl-C and exit codes, on both runtimes through the official SDK.

A real PTY (process runtime) echoes what is typed, ends lines with ``\\r\\n`` and shows bash's
prompt; bashkit's PTY does none of these. The tests compare the lines a program printed, with
``\\r`` dropped and prompts and echoed input left out, and name each documented difference.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from createos.models import (
    ManagedProcessConnectEventType,
    ManagedProcessConnectOptions,
    ManagedProcessCreateRequest,
    PTYSize,
)

from fake_server.runtime.process import ProcessMachine
from fake_server.runtime.process.sandbox import tree
from tests._helpers import bashkit_differs, settled

if TYPE_CHECKING:
    from createos.instance import SandboxInstance

    from fake_server import FakeCreateOS

pytestmark = pytest.mark.reliability


class Pty:
    """One PTY process and everything it printed so far (read without blocking on the end)."""

    def __init__(self, rt_fake: FakeCreateOS, box: SandboxInstance, rows: int, cols: int) -> None:
        request = ManagedProcessCreateRequest(pty=PTYSize(rows=rows, cols=cols))
        self.box = box
        self.process_id = box.processes.create(request).process_id
        self._process = rt_fake.sandbox(box.id).processes[self.process_id]

    def type(self, text: str) -> None:
        self.box.processes.input(self.process_id, text)

    def screen(self) -> str:
        """The output so far, ``\\r`` dropped (a real PTY's ``\\r\\n``)."""
        data = b"".join(frame.data for frame in self._process.output.after(0))
        return data.decode(errors="replace").replace("\r", "")

    def lines(self) -> list[str]:
        return self.screen().split("\n")

    def until(self, line: str) -> None:
        """Wait until a whole line ``line`` was printed (real programs print on real time)."""
        assert settled(lambda: line in self.lines()), self.screen()

    def finish(self) -> int | None:
        with self.box.processes.connect(
            self.process_id, ManagedProcessConnectOptions(after_sequence=0)
        ) as frames:
            last = [f for f in frames if f.type == ManagedProcessConnectEventType.EXIT]
        return last[-1].exit_code


def test_stty_size_shows_the_window_from_create_and_after_resize(
    rt_fake: FakeCreateOS, box: SandboxInstance
) -> None:
    pty = Pty(rt_fake, box, 30, 100)
    pty.type("stty size\n")
    pty.until("30 100")
    box.processes.resize(pty.process_id, PTYSize(rows=50, cols=132))
    pty.type("stty size; echo done-$?\n")
    pty.until("done-0")
    assert "50 132" in pty.lines()
    pty.type("exit 4\n")
    assert pty.finish() == 4


@pytest.fixture(name="line_discipline")
def _line_discipline(rt_fake: FakeCreateOS, request: pytest.FixtureRequest) -> None:
    bashkit_differs(
        rt_fake, request, "bashkit's PTY has no line discipline (no echo, Ctrl-C is a byte)"
    )


@pytest.mark.usefixtures("line_discipline")
def test_a_pty_echoes_what_is_typed(rt_fake: FakeCreateOS, box: SandboxInstance) -> None:
    pty = Pty(rt_fake, box, 24, 80)
    pty.type("true typed-text; echo printed\n")
    pty.until("printed")
    pty.type("exit\n")
    assert pty.finish() == 0
    assert "typed-text" in pty.screen()


@pytest.mark.usefixtures("line_discipline")
def test_ctrl_c_interrupts_the_foreground_program(
    rt_fake: FakeCreateOS, box: SandboxInstance
) -> None:
    pty = Pty(rt_fake, box, 24, 80)
    pty.type("echo ready; sleep 300\n")
    pty.until("ready")
    machine = rt_fake.sandbox(box.id).machine
    if isinstance(machine, ProcessMachine):
        # As a person would, press Ctrl-C once `sleep` holds the terminal: pressed while bash
        # is still handing it over (a wide window on a loaded machine), it reaches bash, not
        # `sleep`.
        assert settled(lambda: _leads_the_terminal(machine, "sleep")), pty.screen()
    pty.type("\x03")
    pty.type("echo status-$?\n")
    assert settled(lambda: "status-130" in pty.lines(), bound=5.0), pty.screen()
    pty.type("exit 0\n")
    assert pty.finish() == 0


def _leads_the_terminal(machine: ProcessMachine, name: str) -> bool:
    """A process named ``name`` in the sandbox is in its terminal's foreground process group
    (``/proc/PID/stat``: its process group equals the terminal's ``tpgid``)."""
    for run in list(machine.runs.values()):
        for level in tree.descendants(run.pid):
            for pid in level:
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text()
                except OSError:
                    continue
                command = stat[stat.index("(") + 1 : stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2 :].split()
                if command == name and fields[2] == fields[5]:  # pgrp == tpgid
                    return True
    return False
