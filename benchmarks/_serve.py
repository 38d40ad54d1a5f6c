"""``createos-fake serve`` in a subprocess, as a user starts it, and what its start-up lines say.

The soak benchmark and the tests that need a real ``serve`` process (official TypeScript
examples, a cold interpreter) start it here, so the start-up lines are parsed in one place.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["Serve", "start_serve"]


@dataclass(slots=True)
class Serve:
    """A running ``serve``: its process, its start-up lines and what they name."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    origin: str = ""
    key: str = ""
    control_key: str = ""

    def stop(self, how: signal.Signals = signal.SIGINT, timeout: float = 30) -> tuple[int, str]:
        """Signal it and wait: its exit status and whatever it wrote to stderr."""
        if self.process.poll() is None:
            self.process.send_signal(how)
        _out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, err or ""

    def kill(self) -> None:
        """End it whatever state it is in (a test's cleanup)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


def start_serve(
    *flags: str,
    env: Mapping[str, str] | None = None,
    python: Sequence[str] = (),
    capture_stderr: bool = True,
    prefix: Sequence[str] = (),
) -> Serve:
    """``python -m fake_server serve --port 0 --quiet FLAGS``, read up to its control key line.

    ``python`` holds interpreter flags (``-B``); a long run passes ``capture_stderr=False``
    (its stderr then goes where this process's goes, so a full pipe cannot stall it).
    Raises ``RuntimeError`` with its stderr when it exits or stops printing before naming
    its origin, key and control key. ``prefix`` runs it under another program (``setpriv``).
    """
    command = [
        *prefix,
        sys.executable,
        *python,
        "-m",
        "fake_server",
        "serve",
        "--port",
        "0",
        "--quiet",
    ]
    process = subprocess.Popen(
        [*command, *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if capture_stderr else None,
        text=True,
        env=None if env is None else dict(env),
    )
    served = Serve(process)
    assert process.stdout is not None
    while line := process.stdout.readline():
        line = line.rstrip("\n")
        served.lines.append(line)
        if line.startswith("createos-fake serving "):
            served.origin = line.split()[2]
        elif line.startswith("export CREATEOS_API_KEY="):
            served.key = line.split("=", 1)[1]
        elif line.startswith("control key: "):
            served.control_key = line.removeprefix("control key: ")
            break
    if not (served.origin and served.key and served.control_key):
        process.kill()
        _out, err = process.communicate()
        detail = f": {err.strip()}" if err else ""
        raise RuntimeError(f"serve did not print its origin, key and control key{detail}")
    return served
