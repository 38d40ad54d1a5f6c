"""What the exhaustion attacks share: the fake's own usage, and a watch on ``/readyz`` that runs
beside an attack.

``Watch`` polls ``/readyz`` from a process of its own (``_watcher``, every 0.3 s: the open
routes' rate limit is 300 requests a minute per peer) and samples the ``serve`` process's
resident set and open descriptors at each poll; the test then asserts that every poll
answered 200 within a second and that the peaks stayed bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.security._attack import Target

__all__ = ["PER_PROCESS", "Usage", "Watch", "open_stalled", "stalled_elsewhere", "usage"]

MIB = 1024 * 1024
#: The checkout, where ``python -m tests.security._watcher`` finds its module.
_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class Usage:
    rss: int
    fds: int


def usage(pid: int) -> Usage:
    """The resident set (bytes) and open descriptors of process ``pid``."""
    with open(f"/proc/{pid}/status") as status:
        rss = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))
    return Usage(rss, len(os.listdir(f"/proc/{pid}/fd")))


@dataclass
class Watch:
    """``/readyz`` and the fake's usage, sampled by a process of its own (``_watcher``) while
    the ``with`` block runs; ``sample()`` adds a sample taken here."""

    target: Target
    interval: float = 0.3
    polls: int = 0
    failures: list[str] = field(default_factory=list)
    peak: Usage = Usage(0, 0)
    base: Usage = Usage(0, 0)
    _process: subprocess.Popen[str] | None = None

    def __enter__(self) -> Watch:
        pid = self.target.serve.process.pid
        self.base = self.peak = usage(pid)
        command = [sys.executable, "-m", "tests.security._watcher", self.target.origin]
        self._process = subprocess.Popen(
            [*command, str(pid), str(self.interval)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=_ROOT,
        )
        assert self._process.stdout is not None
        self._record(self._process.stdout.readline())  # a first poll before the attack
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None
        out, _ = self._process.communicate(input="", timeout=30)
        for line in out.splitlines():
            self._record(line)

    def _record(self, line: str) -> None:
        poll = json.loads(line)
        self.polls += 1
        if poll["problem"]:
            self.failures.append(f"/readyz: {poll['problem']}")
        self._seen(Usage(poll["rss"], poll["fds"]))

    def sample(self) -> Usage:
        now = usage(self.target.serve.process.pid)
        self._seen(now)
        return now

    def _seen(self, now: Usage) -> None:
        self.peak = Usage(max(self.peak.rss, now.rss), max(self.peak.fds, now.fds))

    def check(self, *, rss_growth: int, fd_growth: int) -> None:
        """Every poll answered in time; the peaks stayed within the growths given."""
        assert self.polls >= 2  # at least one before the attack and one after
        assert self.failures == [], self.failures
        grew = Usage(self.peak.rss - self.base.rss, self.peak.fds - self.base.fds)
        assert grew.rss < rss_growth, f"the fake grew by {grew.rss // MIB} MiB"
        assert grew.fds < fd_growth, f"the fake opened {grew.fds} more descriptors"


#: Stalled connections one helper process holds (each has the same open-files limit as this
#: one: 1024 under CI's ``ulimit -n 1024``, which the attack's 1,650 connections exceed).
PER_PROCESS = 600


@contextlib.contextmanager
def stalled_elsewhere(address: tuple[str, int], payloads: list[bytes]) -> Iterator[int]:
    """``open_stalled`` in helper processes (``PER_PROCESS`` connections each), held until
    the ``with`` block ends; yields how many connections they hold."""
    helpers: list[subprocess.Popen[str]] = []
    held = 0
    try:
        for first in range(0, len(payloads), PER_PROCESS):
            chunk = [p.decode("latin-1") for p in payloads[first : first + PER_PROCESS]]
            helper = subprocess.Popen(
                [sys.executable, "-m", "tests.security._stall", address[0], str(address[1])],
                cwd=_ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            helpers.append(helper)
            assert helper.stdin is not None
            assert helper.stdout is not None
            helper.stdin.write(json.dumps(chunk) + "\n")
            helper.stdin.flush()
            held += int(helper.stdout.readline())
        yield held
    finally:
        for helper in helpers:  # end of input: each closes its connections and exits
            if helper.stdin is not None:
                helper.stdin.close()
        for helper in helpers:
            helper.wait(30)
            if helper.stdout is not None:
                helper.stdout.close()


def open_stalled(address: tuple[str, int], payloads: list[bytes]) -> list[socket.socket]:
    """One connection per payload, each sent that payload and then left stalled (nothing
    more is ever sent). Connections the server refuses or drops are closed and left out."""
    pending = []
    for payload in payloads:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex(address)
        pending.append((sock, payload))
    opened: list[socket.socket] = []
    deadline = time.monotonic() + 20
    while pending and time.monotonic() < deadline:
        waiting = []
        for sock, payload in pending:
            try:
                sock.send(payload)
            except BlockingIOError:
                waiting.append((sock, payload))
                continue
            except OSError:
                sock.close()
                continue
            opened.append(sock)
        pending = waiting
        if pending:
            time.sleep(0.05)
    for sock, _ in pending:  # never connected (the server stopped accepting): not held
        sock.close()
    return opened
