"""A tunnel's bytes moved by the kernel: ``os.splice`` from one socket into a pipe and from the
pipe into the other socket, driven by the event loop's readiness callbacks.

Copying every chunk through Python (a read into the process, a write out of it), as
``streams.relay`` does for WebSockets, costs the fake's one loop, which carries the HTTP traffic
of every test too; splicing leaves the bytes in the kernel, so a tunnel costs the loop two
system calls per chunk and no copy (``benchmarks/bench_tunnel.py``). It needs plain TCP (the
fake serves no TLS) and Linux (as the process runtime does).

The client's socket is a duplicate of the one aiohttp's transport owns: the transport is
closed once the ``101`` has been sent, and the duplicate keeps the connection open. Endings
are ``http.streams.relay``'s: the sandbox's side ending closes the client's connection; the client's
EOF is passed on with ``shutdown(SHUT_WR)`` and the sandbox's answer still flows.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["PIPE_SIZE", "splice_relay"]

#: Bytes one pipe holds between its two sockets (``F_SETPIPE_SZ``; the default 64 KiB where
#: the system refuses more).
PIPE_SIZE = 1 << 20
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


async def splice_relay(client: socket.socket, sandbox: socket.socket, early: bytes) -> None:
    """Relay until the sandbox's side ends or either side fails; ``early`` (bytes the client
    sent before the hand-over) goes to the sandbox first. Closes neither socket."""
    loop = asyncio.get_running_loop()
    if early:
        await loop.sock_sendall(sandbox, early)
    done: asyncio.Future[None] = loop.create_future()

    def up_ended(error: OSError | None) -> None:
        if error is not None:
            finished(None)
            return
        with contextlib.suppress(OSError):
            sandbox.shutdown(socket.SHUT_WR)  # the client's EOF, passed on

    def finished(_: OSError | None) -> None:
        if not done.done():
            done.set_result(None)

    up = _Pump(loop, client, sandbox, up_ended)
    down = _Pump(loop, sandbox, client, finished)
    try:
        await done
    finally:
        up.close()
        down.close()


class _Pump:
    """One direction: ``src`` into a pipe, the pipe into ``dst``; reading pauses while
    ``dst`` cannot take more, so at most ``PIPE_SIZE`` bytes wait in between."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        src: socket.socket,
        dst: socket.socket,
        ended: Callable[[OSError | None], None],
    ) -> None:
        self._loop = loop
        self._src = src.fileno()
        self._dst = dst.fileno()
        self._ended = ended
        self._out, self._in = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        with contextlib.suppress(OSError):
            fcntl.fcntl(self._in, _F_SETPIPE_SZ, PIPE_SIZE)
        self._buffered = 0
        self._eof = False
        self._reading = False
        self._writing = False
        self._closed = False
        self._read_on()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._read_off()
        if self._writing:
            self._loop.remove_writer(self._dst)
        os.close(self._in)
        os.close(self._out)

    def _readable(self) -> None:
        try:
            moved = os.splice(self._src, self._in, PIPE_SIZE, flags=_FLAGS)
        except BlockingIOError:
            return
        except OSError as exc:
            self._end(exc)
            return
        if moved == 0:
            self._eof = True
            self._read_off()
        self._buffered += moved
        self._flush()

    def _flush(self) -> None:
        while self._buffered:
            try:
                moved = os.splice(self._out, self._dst, self._buffered, flags=_FLAGS)
            except BlockingIOError:  # dst is full: wait for it, read no more meanwhile
                self._read_off()
                if not self._writing:
                    self._writing = True
                    self._loop.add_writer(self._dst, self._flush)
                return
            except OSError as exc:
                self._end(exc)
                return
            self._buffered -= moved
        if self._writing:
            self._writing = False
            self._loop.remove_writer(self._dst)
        if self._eof:
            self._end(None)
        else:
            self._read_on()

    def _end(self, error: OSError | None) -> None:
        self.close()
        self._ended(error)

    def _read_on(self) -> None:
        if not self._reading and not self._closed:
            self._reading = True
            self._loop.add_reader(self._src, self._readable)

    def _read_off(self) -> None:
        if self._reading:
            self._reading = False
            self._loop.remove_reader(self._src)


_FLAGS = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK
