"""What the exhaustion attacks share: the fake's own usage, and a watch on ``/readyz`` that runs
beside an attack.

``Watch`` polls ``/readyz`` from a thread of its own (every 0.3 s: the open routes' rate limit
is 300 requests a minute per peer) and samples the ``serve`` process's resident set and open
descriptors at each poll; the test then asserts that every poll answered 200 within a second
and that the peaks stayed bounded.
"""

from __future__ import annotations

import os
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.security._attack import Target

__all__ = ["Usage", "Watch", "open_stalled", "until", "usage"]

_TLS = ssl.create_default_context()
MIB = 1024 * 1024


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
    """``/readyz`` and the fake's usage, sampled from a thread while the ``with`` block runs."""

    target: Target
    interval: float = 0.3
    polls: int = 0
    failures: list[str] = field(default_factory=list)
    peak: Usage = Usage(0, 0)
    base: Usage = Usage(0, 0)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Watch:
        self.base = self.peak = usage(self.target.serve.process.pid)
        self._thread = threading.Thread(target=self._run, name="readyz-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout=10)

    def _run(self) -> None:
        with httpx.Client(base_url=self.target.origin, verify=_TLS, timeout=1.0) as client:
            while not self._stop.is_set():
                self.sample()
                started = time.monotonic()
                try:
                    reply = client.get("/readyz")
                    if reply.status_code != 200:
                        self.failures.append(f"/readyz answered {reply.status_code}")
                except httpx.HTTPError as exc:
                    waited = time.monotonic() - started
                    self.failures.append(f"/readyz: {type(exc).__name__} after {waited:.2f} s")
                self.polls += 1
                self._stop.wait(self.interval)

    def sample(self) -> Usage:
        now = usage(self.target.serve.process.pid)
        self.peak = Usage(max(self.peak.rss, now.rss), max(self.peak.fds, now.fds))
        return now

    def check(self, *, rss_growth: int, fd_growth: int) -> None:
        """Every poll answered in time; the peaks stayed within the growths given."""
        assert self.polls >= 1
        assert self.failures == [], self.failures
        grew = Usage(self.peak.rss - self.base.rss, self.peak.fds - self.base.fds)
        assert grew.rss < rss_growth, f"the fake grew by {grew.rss // MIB} MiB"
        assert grew.fds < fd_growth, f"the fake opened {grew.fds} more descriptors"


def until(condition: Callable[[], Any], *, timeout: float = 30.0, what: str = "") -> Any:
    """Poll ``condition`` until it is truthy (returned), failing after ``timeout`` real
    seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(0.05)


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
