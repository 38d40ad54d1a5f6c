"""``serve``'s stdout and stderr: lines that never change an answer or hold up a signal.

``createos-fake serve | head -3`` closes the pipe after three lines; a print to it then raises
``BrokenPipeError``, which, raised in the request log, turned every answer into a 500 and, raised
in the signal handler, kept Ctrl-C and SIGTERM from stopping the server. A reader that is alive
but stops reading is worse: a print to a full pipe blocks the event loop, every request and
every signal with it. So the lines go to a thread of their own, which writes them with
``os.write`` (no Python lock held while it blocks, so a stuck write never holds up the
interpreter's exit); a stream that fails is dropped, and past ``BACKLOG`` lines waiting, new
ones are dropped too. A stream without a file descriptor (pytest's ``capsys``) is written
directly, its errors ignored.
"""

from __future__ import annotations

import collections
import contextlib
import os
import sys
import threading
from typing import TextIO

__all__ = ["BACKLOG", "Console"]

#: Lines waiting for a slow reader before new ones are dropped.
BACKLOG = 10_000


class _Stream:
    """One of the two streams: its descriptor, or the object itself where it has none."""

    __slots__ = ("dead", "fd", "stream")

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self.dead = stream is None
        self.fd: int | None = None
        if stream is not None:
            with contextlib.suppress(AttributeError, OSError, ValueError):
                stream.flush()  # anything printed before goes first
                self.fd = stream.fileno()

    def write_now(self, line: str) -> None:
        """For a stream without a descriptor (in-process tests): written and flushed here."""
        if self.dead or self.stream is None:
            return
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.dead = True


class Console:
    """``out(line)`` and ``err(line)`` never raise and never block; ``close()`` at the end."""

    def __init__(self, stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self._out = _Stream(stdout if stdout is not None else sys.stdout)
        self._err = _Stream(stderr if stderr is not None else sys.stderr)
        self._lines: collections.deque[tuple[_Stream, bytes]] = collections.deque()
        self._cond = threading.Condition()
        self._closing = False
        #: Lines dropped because their reader was too slow (not those of a gone reader).
        self.dropped = 0
        self._thread: threading.Thread | None = None

    def out(self, line: str) -> None:
        self._put(self._out, line)

    def err(self, line: str) -> None:
        self._put(self._err, line)

    def _put(self, target: _Stream, line: str) -> None:
        if target.dead:
            return
        if target.fd is None:
            target.write_now(line)
            return
        with self._cond:
            if len(self._lines) >= BACKLOG:
                self.dropped += 1
                return
            self._lines.append((target, (line + "\n").encode(errors="replace")))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._write, name="createos-fake-console", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def _write(self) -> None:
        while True:
            with self._cond:
                while not self._lines and not self._closing:
                    self._cond.wait()
                if not self._lines:
                    return
                target, data = self._lines.popleft()
            if target.dead or target.fd is None:
                continue
            try:
                while data:
                    data = data[os.write(target.fd, data) :]
            except OSError:  # EPIPE (the reader is gone), EBADF, EIO: this stream is done
                target.dead = True

    def close(self, timeout: float = 1.0) -> None:
        """Write what waits, for at most ``timeout`` real seconds (a stuck reader gets no more)."""
        with self._cond:
            self._closing = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
