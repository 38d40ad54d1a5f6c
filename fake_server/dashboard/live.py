"""Live updates pushed to open dashboard pages as Server-Sent Events.

The journal records every change the fake makes (requests, replies, status transitions,
faults), so the hub listens to it: each event is handed to the serving loop, and what
arrived in one loop turn goes out as one ``batch`` message to every open page, with the rows
of the sandboxes it touched. A process's output has a stream of its own, read with
``OutputJournal.peek`` and ``Process.changed`` so that watching neither changes what clients
read nor holds a virtual clock still.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from typing import TYPE_CHECKING, Any

from aiohttp import web

from fake_server.clock import RealClock
from fake_server.dashboard.journal_page import summary
from fake_server.dashboard.projections import sandbox_row

if TYPE_CHECKING:
    from fake_server.models import Event, Journal, Process, World

__all__ = ["HEARTBEAT_SECONDS", "Hub", "process_output", "sse_response"]

#: Real seconds between comment lines that keep an idle stream open through proxies.
HEARTBEAT_SECONDS = 15.0
#: Messages a slow page may fall behind before it is told to reload instead.
MAX_BACKLOG = 256
#: Journal rows carried per batch; a busier turn sends the count and lets pages fetch.
MAX_ROWS = 200
#: Output bytes sent per process message.
_CHUNK = 64 * 1024


class Hub:
    """Fans journal events out to the open pages; a listener of the fake's journal."""

    def __init__(self, world: World) -> None:
        self._world = world
        self._journal: Journal = world.ctx.journal
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._queues: set[asyncio.Queue[str | None]] = set()
        self._pending: list[Event | None] = []
        self._scheduled = False
        self._count = 0
        self._reminder: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Listen from now on (called on the serving loop); later calls do nothing."""
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._count = self._journal.dropped + len(self._journal)
        self._journal.listeners.append(self._heard)

    def stop(self) -> None:
        if self._reminder is not None:
            self._reminder.cancel()
        with contextlib.suppress(ValueError):
            self._journal.listeners.remove(self._heard)
        for queue in list(self._queues):
            queue.put_nowait(None)

    def _heard(self, event: Event | None) -> None:
        loop = self._loop
        if loop is None or not self._queues:
            if event is None:
                self._count = 0
            else:
                self._count += 1
            return
        if threading.get_ident() == self._thread:
            self._add(event)
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody is watching
                loop.call_soon_threadsafe(self._add, event)

    def _add(self, event: Event | None) -> None:
        self._pending.append(event)
        if not self._scheduled and self._loop is not None:
            self._scheduled = True
            self._loop.call_soon(self._flush)

    def remind(self, seconds: float) -> None:
        """Tell pages of resources to read again in ``seconds``: a template build's log grows
        with time alone, no event marks it. Only on a real clock: a timer on a virtual one
        would be a deadline it could jump to, moving time for a test that merely watches."""
        if not isinstance(self._world.ctx.clock, RealClock) or self._loop is None:
            return
        when = self._loop.time() + max(0.0, seconds)
        if self._reminder is not None and self._reminder.when() <= when:
            return
        if self._reminder is not None:
            self._reminder.cancel()
        self._reminder = self._loop.call_at(when, self._remind)

    def _remind(self) -> None:
        self._reminder = None
        self.poke(resources=True)

    def poke(self, **changed: bool) -> None:
        """Tell every page that something outside the journal changed (faults armed here)."""
        self._send({"changed": [name for name, value in changed.items() if value]})

    def _flush(self) -> None:
        self._scheduled = False
        pending, self._pending = self._pending, []
        rows: list[dict[str, Any]] = []
        touched: dict[str, None] = {}
        reset = False
        changed: set[str] = set()
        origin = self._journal.origin
        for event in pending:
            if event is None:
                reset, rows, touched, self._count = True, [], {}, 0
                continue
            index = self._count
            self._count += 1
            if len(rows) < MAX_ROWS:
                rows.append(summary(index, event, origin))
            if event.sandbox_id:
                touched[event.sandbox_id] = None
            changed.update(_changed(event))
        sandboxes, removed = [], []
        for sandbox_id in touched:
            sandbox = self._world.find_sandbox(sandbox_id)
            if sandbox is None:
                removed.append(sandbox_id)
            else:
                sandboxes.append(sandbox_row(sandbox))
        self._send(
            {
                "reset": reset,
                "journal": rows,
                "journal_count": self._count,
                "sandboxes": sandboxes,
                "removed": removed,
                "changed": sorted(changed),
            }
        )

    def _send(self, message: dict[str, Any]) -> None:
        text = "event: batch\ndata: " + json.dumps(message, separators=(",", ":")) + "\n\n"
        for queue in list(self._queues):
            if queue.qsize() >= MAX_BACKLOG:
                # Behind by too much: drop its backlog and ask the page to reload its data.
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait("event: resync\ndata: {}\n\n")
            else:
                queue.put_nowait(text)

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """``GET …/api/events``: batches until the page goes away."""
        response = await sse_response(request)
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._queues.add(queue)
        try:
            await response.write(b"event: hello\ndata: {}\n\n")
            while True:
                try:
                    text = await asyncio.wait_for(queue.get(), HEARTBEAT_SECONDS)
                except TimeoutError:
                    text = ": heartbeat\n\n"
                if text is None:
                    break
                await response.write(text.encode())
        except ConnectionResetError:
            pass  # the page went away
        finally:
            self._queues.discard(queue)
        return response


def _changed(event: Event) -> set[str]:
    """Which pages besides sandboxes and journal an event concerns."""
    found = set()
    operation = event.operation or ""
    if event.kind == "fault" or "fault" in operation:
        found.add("faults")
    named = event.network_id or event.disk_id or event.template_id
    if named or any(word in operation for word in ("network", "disk", "template")):
        found.add("resources")
    return found


async def sse_response(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
    )
    await response.prepare(request)
    return response


async def process_output(request: web.Request, process: Process, after: int) -> web.StreamResponse:
    """A process's output from ``after`` on, live, then its exit: ``output`` and ``exit``
    events with text decoded as UTF-8 (bad bytes replaced)."""
    response = await sse_response(request)
    cursor = after
    try:
        while True:
            output = process.output
            if output.expired(cursor):
                cursor = output.oldest_seq - 1
                await _event(response, "skipped", {"to": cursor})
            frames = output.peek(cursor)
            for frame in frames:
                for start in range(0, len(frame.data), _CHUNK):
                    text = frame.data[start : start + _CHUNK].decode("utf-8", "replace")
                    await _event(
                        response, "output", {"seq": frame.seq, "stream": frame.stream, "text": text}
                    )
                cursor = frame.seq
            if process.tree_exited and cursor >= output.newest_seq:
                data = {"exit_code": process.exit_code, "signal": process.signal}
                await _event(response, "exit", data)
                break
            if frames:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.changed(), HEARTBEAT_SECONDS)
    except ConnectionResetError:
        pass  # the page went away
    return response


async def _event(response: web.StreamResponse, name: str, data: dict[str, Any]) -> None:
    await response.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
