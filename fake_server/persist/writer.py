"""The thread that writes the store's transactions, in order, so no answer waits on SQLite.

The saver builds each transaction's rows on the serving loop (what changed, as JSON) and hands
them here; SQLite releases the GIL while it writes and checkpoints, so the loop goes on
answering meanwhile. What waits is memory: the transactions not yet written. A transaction
that fails is rolled back and kept, with its journal events, for the saver to take up on its
loop (``failures``): it then reads what the store really holds and writes everything that
differs (``Saver.stale``).
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from fake_server.models import Event
    from fake_server.persist.store import Store

__all__ = ["Writer"]


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
