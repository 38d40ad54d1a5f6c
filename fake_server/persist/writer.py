"""The thread that writes the store's transactions, in order, so no answer waits on SQLite.

The saver builds each transaction's rows on the serving loop (what changed, as JSON) and adds
them here; those of a few milliseconds go to the thread together, as one transaction, and
SQLite releases the GIL while it writes and checkpoints, so the loop goes on answering
meanwhile. What waits is memory: the transactions not yet written. A transaction
that fails is rolled back and kept, with its journal events, for the saver to take up on its
loop (``failures``): it then reads what the store really holds and writes everything that
differs (``Saver.stale``).
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.models import Event
    from fake_server.persist.store import Store

__all__ = ["WRITE_EVERY", "Writer"]

#: Real seconds a loop turn's transaction waits for the next turns' before the thread gets
#: them as one: a burst of changes wakes it once, not once per request.
WRITE_EVERY = 0.005


class Writer:
    """Runs ``submit``ted transactions one after another on a thread of its own."""

    def __init__(self, store: Store, notify: Callable[[], None]) -> None:
        """``notify`` is called on the writer's thread after a transaction failed."""
        self._store = store
        self._notify = notify
        self._jobs: queue.SimpleQueue[
            tuple[Callable[[sqlite3.Connection], None], list[Event]] | None
        ] = queue.SimpleQueue()
        self._lock = threading.Condition()
        self._waiting = 0
        #: Failed transactions, oldest first: the error and the journal events they held.
        self.failures: list[tuple[Exception, list[Event]]] = []
        self._thread: threading.Thread | None = None
        #: Jobs added and not yet handed to the thread.
        self._outgoing: list[tuple[Callable[[sqlite3.Connection], None], list[Event]]] = []
        self._handing = False

    def add(self, job: Callable[[sqlite3.Connection], None], events: list[Event]) -> None:
        """Write ``job`` after every transaction added before it: at once outside a loop, else
        within ``WRITE_EVERY`` with every other job added meanwhile, as one transaction."""
        self._outgoing.append((job, events))
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a restore or a stop
            self.hand_over()
            return
        if not self._handing:
            self._handing = True
            loop.call_later(WRITE_EVERY, self.hand_over)

    def hand_over(self) -> None:
        """Give the thread every job added since the last hand-over, as one transaction."""
        self._handing = False
        outgoing, self._outgoing = self._outgoing, []
        if not outgoing:
            return

        def job(db: sqlite3.Connection) -> None:
            for part, _ in outgoing:
                part(db)

        self.submit(job, [event for _, events in outgoing for event in events])

    def submit(self, job: Callable[[sqlite3.Connection], None], events: list[Event]) -> None:
        """Write ``job`` after every transaction submitted before it."""
        with self._lock:
            self._waiting += 1
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="createos-fake-state-writer", daemon=True
            )
            self._thread.start()
        self._jobs.put((job, events))

    def drain(self) -> None:
        """Wait until every transaction submitted so far is written (or has failed)."""
        with self._lock:
            self._lock.wait_for(lambda: self._waiting == 0)

    def close(self) -> None:
        """Write what is left, then stop the thread; idempotent."""
        self.hand_over()
        thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join()

    def take_failures(self) -> list[tuple[Exception, list[Event]]]:
        with self._lock:
            failures, self.failures = self.failures, []
        return failures

    def _run(self) -> None:
        while (item := self._jobs.get()) is not None:
            job, events = item
            try:
                with self._store.transaction() as db:
                    job(db)
            except (sqlite3.Error, OSError) as exc:
                with self._lock:
                    self.failures.append((exc, events))
                self._notify()
            finally:
                with self._lock:
                    self._waiting -= 1
                    self._lock.notify_all()
