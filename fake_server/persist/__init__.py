"""``createos-fake serve --state-dir DIR``: the fake's world kept on disk across restarts.

``Persistence`` opens the state directory (``store``), brings back what it holds
(``restore``), saves what each request changed (``saver``, through the middleware of
``hook``) and everything at a clean stop. The pytest fixtures never use it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from fake_server.persist.blobs import Blobs
from fake_server.persist.hook import Gate, persistence_middleware
from fake_server.persist.restore import Restored, restore
from fake_server.persist.saver import Saver
from fake_server.persist.store import DB_NAME, SCHEMA_VERSION, StateDirError, Store

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from fake_server.server import FakeCreateOS

__all__ = ["SCHEMA_VERSION", "Persistence", "StateDirError"]


class Persistence:
    """One fake's state directory, restored into it at once and saved as it changes.

    Raises ``StateDirError`` (the message names the path and the cause) when the directory
    cannot be used. Attach before the fake starts serving.
    """

    def __init__(
        self,
        fake: FakeCreateOS,
        directory: Path,
        *,
        on_error: Callable[[str], None],
        keep_key: bool | None = None,
    ) -> None:
        """``keep_key``: whether the fake's default key was chosen by the user and stays
        (default: when it was given to the fake); else the saved default account's is used."""
        directory = directory.absolute()
        self.directory = directory
        self.store = Store(directory)
        try:
            self.blobs = Blobs(directory / "blobs")
            fake.runtimes.keep_in(directory / "sandboxes", directory / "disks")
            self.saver = Saver(self.store, self.blobs, fake.world, on_error, fake.runtimes.keeper())
            if keep_key is None:
                keep_key = fake.fixed_api_key is not None
            try:
                self.restored: Restored = restore(
                    fake, self.store, self.blobs, self.saver, keep_key=keep_key
                )
            except (ValueError, KeyError, TypeError) as exc:  # a row this version cannot read
                raise StateDirError(
                    f"state database {directory / DB_NAME} could not be restored "
                    f"({type(exc).__name__}: {exc}); nothing was changed: move the directory "
                    "aside or use another --state-dir"
                ) from None
            self.saver.save_all(files=False)  # the statuses that changed, what was destroyed
            self.saver.sync()
            self.blobs.gc(self.saver.keeper.references(self.saver.manifests.values()))
        except BaseException:
            with contextlib.suppress(Exception):
                self.saver.close()
            self.store.close()
            raise
        self.gate = Gate()
        fake.middlewares.append(persistence_middleware(self.gate, self.saver))
        fake.closing_hooks.append(self.close)
        self._closed = False

    def describe(self) -> list[str]:
        """The start-up lines: where the state lives, what came back, what was done to it."""
        done = self.restored
        if done.accounts:
            summary = (
                f"restored {done.accounts} account(s) and {done.sandboxes} sandbox(es); "
                f"{done.paused} that were running came back paused"
            )
        else:
            summary = "new"
        notes = [f"state: {note}" for note in (*self.store.notes, *done.notes)]
        return [f"state: {self.directory} ({summary})", *notes]

    def begin_stop(self) -> None:
        """From now on a request is answered 503 and changes nothing (a stop has begun; the
        requests under way finish and are saved, then ``close()`` saves everything)."""
        self.gate.closing = True

    def close(self) -> None:
        """Save everything and release the directory; idempotent."""
        if self._closed:
            return
        self._closed = True
        self.gate.closing = True
        try:
            self.saver.save_all()
            self.saver.close()
            if not self.saver.stale:
                self.blobs.gc(self.saver.keeper.references(self.saver.manifests.values()))
        finally:
            self.saver.closed = True
            self.saver.writer.close()
            self.store.close()
