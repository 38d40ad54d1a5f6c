"""Writes what changed in the world to the store: one transaction per loop turn that changed it.

A request names its scope (its account and sandbox); only that scope is encoded and compared
with what was last written, so a request costs the same with 1 or 1,000 sandboxes. A request
only notes its scope (a read that moved nothing, not even that); the scopes of one loop turn
are written together once the turn's answers are out, so no answer waits on a write. Files a
runtime keeps in memory (bashkit's, through its ``FileKeeper``) are snapshotted after every
request that may change them (any method but GET on a sandbox) and at a clean stop; a runtime
that keeps its sandboxes' directories in the state directory (the process runtime's) needs
nothing. Journal events are written with the next change, or at most
a quarter of a second after they happen.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fake_server.persist.batch import Batch, read_back, write, write_journal
from fake_server.persist.codec import (
    RESTORED_STATUS,
    encode_account,
    encode_events,
    encode_sandbox,
    mark,
)
from fake_server.persist.writer import Writer

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable

    from fake_server.models import Account, Event, Sandbox, World
    from fake_server.persist.blobs import Blobs
    from fake_server.persist.store import Store
    from fake_server.runtime.api import FileKeeper
    from fake_server.runtime.api import Snapshot as Manifest

__all__ = ["IMAGE", "JOURNAL_EVERY", "Saver", "bucket_owner"]

#: What the store may hold for a sandbox whose files are still exactly the image's (as does
#: no row at all).
IMAGE = "image"

#: Real seconds a journal event may wait for the next change before it is written anyway
#: (short, so each write's encoding is a small one, not a stall every second).
JOURNAL_EVERY = 0.25


def bucket_owner(endpoint: str, bucket: str, part: str) -> str:
    return "bucket:" + json.dumps([endpoint, bucket, part])


@dataclass(slots=True)
class _Noted:
    """An account the requests of one loop turn named: the sandboxes they named (``True``:
    one of them changed it, ``False``: only read it) and whether one was a change."""

    account: Account
    sandboxes: dict[str, bool] = field(default_factory=dict)
    changed: bool = False


class Saver:
    """The world's last written state (to compare with) and the writes that keep it current."""

    def __init__(
        self,
        store: Store,
        blobs: Blobs,
        world: World,
        on_error: Callable[[str], None],
        keeper: FileKeeper,
    ) -> None:
        self.store = store
        self.blobs = blobs
        #: How in-memory files are snapshotted (the runtimes' ``FileKeeper``).
        self.keeper = keeper
        self.world = world
        self.on_error = on_error
        #: What the store holds: JSON text by ``a:<key>`` / ``s:<id>``, manifests by owner.
        self.rows: dict[str, str] = {}
        self.manifests: dict[str, Manifest] = {}
        #: Sandboxes saved as ``IMAGE``, with the wall time they were known to be that.
        self.pristine: dict[str, float] = {}
        #: Sandbox ids saved per account key (to notice a sandbox that went).
        self.saved_ids: dict[str, set[str]] = {}
        #: Template builds running when each account was saved, by key (``_builds``).
        self.builds: dict[str, tuple[str, ...]] = {}
        #: ``codec.mark`` of each sandbox as saved: a read that changed none is not encoded.
        self.marks: dict[str, tuple[Any, ...]] = {}
        #: Sandboxes in the store that could not be restored: kept, never deleted.
        self.kept: set[str] = set()
        self.events: list[Event] = []
        #: ``(seq, count)`` of the journal's rows (one per batch of events), oldest first.
        self.journal_rows: deque[tuple[int, int]] = deque()
        self._journal_generation = world.ctx.journal.generation
        self._flushed = time.monotonic()
        self._fresh: Manifest | None = None
        #: A write failed: the next save writes everything.
        self.stale = False
        #: The store is closed: nothing more is written.
        self.closed = False
        #: Writes the transactions on a thread of its own; ``_loop`` hears of failures.
        self.writer = Writer(store, self._wake)
        self._loop: asyncio.AbstractEventLoop | None = None
        #: What the requests of this loop turn named, by account key.
        self._pending: dict[str, _Noted] = {}
        #: A control-API change in this loop turn: the whole world is saved.
        self._whole = False
        self._scheduled = False
        #: Writes the journal's events when no change did within ``JOURNAL_EVERY``.
        self._journal_timer: asyncio.TimerHandle | None = None
        #: That timer fired: the next commit writes the journal's events.
        self._journal_wanted = False

    # -- what a request changed -------------------------------------------------------------

    def after_request(
        self, account: Account | None, sandbox_id: str | None, *, mutating: bool
    ) -> None:
        """Note the scope of one request (the whole world for the control API's changes),
        encoded when this loop turn ends, after its answers, and written by the writer's
        thread within milliseconds (a clean stop writes all; a killed process loses those)."""
        if self._journal_timer is None and self.events:
            self._journal_soon()
        if account is None:
            if not mutating:
                return
            self._whole = True
        else:
            if self._builds_moved(account):
                mutating = True  # a template build that runs in real time ended: save it
            if not (mutating or self._changed(account, sandbox_id)):
                return
            noted = self._pending.get(account.api_key)
            if noted is None:
                noted = self._pending[account.api_key] = _Noted(account)
            noted.changed |= mutating
            if sandbox_id:
                noted.sandboxes[sandbox_id] = noted.sandboxes.get(sandbox_id, False) or mutating
        if not self._scheduled:
            self._scheduled = True
            self._loop = asyncio.get_running_loop()
            self._loop.call_soon(self.flush)

    def _journal_soon(self) -> None:
        """Write the journal's waiting events ``JOURNAL_EVERY`` from now, if no change
        carries them sooner: a timer, so a request that changed nothing checks no clock."""
        self._loop = asyncio.get_running_loop()
        self._journal_timer = self._loop.call_later(JOURNAL_EVERY, self._journal_due)

    def _journal_due(self) -> None:
        self._journal_timer = None
        self._journal_wanted = True
        if not self._scheduled:
            self.flush()

    def _changed(self, account: Account, sandbox_id: str | None) -> bool:
        """Whether a read may have changed what is saved: a transition settled, or a
        sandbox went (a read drops a sandbox found gone)."""
        if len(self.saved_ids.get(account.api_key, ())) != len(account.sandboxes):
            return True
        if not sandbox_id:
            return False
        sandbox = account.sandboxes.get(sandbox_id)
        return sandbox is not None and self.marks.get(sandbox_id) != mark(sandbox)

    def _builds_moved(self, account: Account) -> bool:
        saved = self.builds.get(account.api_key, ())
        return bool(saved or account.resources.templates.items) and saved != _builds(account)

    def flush(self) -> None:
        """Write what the requests of the loop turn changed, in one transaction."""
        self._scheduled = False
        pending, self._pending = self._pending, {}
        if self.closed:
            return
        if self.stale or self._whole:
            self.save_all()
            return
        batch = Batch()
        for noted in pending.values():
            account = noted.account
            if self.world.accounts.get(account.api_key) is not account:
                continue  # gone since (a reset is a control call: the whole world is saved)
            written = {s for s, changed in noted.sandboxes.items() if changed}
            read = {s for s in noted.sandboxes if s not in written and self._moved(account, s)}
            ids = self.saved_ids.get(account.api_key, set())
            current = account.sandboxes.keys()
            # Only a change adds or removes a sandbox in one request; a read may drop one.
            if len(ids) != len(current) or (noted.changed and ids != current):
                written |= ids ^ set(current)
            self._sandboxes(batch, account, written, files=noted.changed)
            self._sandboxes(batch, account, read - written, files=False)
            if noted.changed:
                self._account(batch, account, list(self.world.accounts).index(account.api_key))
        if any(noted.changed for noted in pending.values()):
            self._buckets(batch)
        self._commit(batch)

    def _moved(self, account: Account, sandbox_id: str) -> bool:
        """Whether a read sandbox's saved state is behind (or it went)."""
        sandbox = account.sandboxes.get(sandbox_id)
        return sandbox is None or self.marks.get(sandbox_id) != mark(sandbox)

    def save_all(self, *, files: bool = True) -> None:
        """Write everything that differs from the store, and delete what is gone;
        ``files=False``: no sandbox's files changed since the last save (a restore)."""
        self._pending.clear()
        self._whole = False
        batch = Batch()
        seen_accounts: set[str] = set()
        seen_sandboxes: set[str] = set()
        owners: set[str] = set()
        for position, account in enumerate(self.world.accounts.values()):
            seen_accounts.add("a:" + account.api_key)
            for sandbox in list(account.sandboxes.values()):
                sandbox.settle()  # a transition due meanwhile is saved as done
            scope = set(account.sandboxes) | self.saved_ids.get(account.api_key, set())
            self._sandboxes(batch, account, scope, files=files)
            seen_sandboxes.update("s:" + s for s in account.sandboxes)
            self._account(batch, account, position)
            owners.update(f"template:{t}" for t in account.resources.templates.items)
        owners.update(self._buckets(batch))
        owners.update(f"sandbox:{s}" for s in self.kept)
        owners.update(f"sandbox:{s[2:]}" for s in seen_sandboxes)
        for key in [k for k in self.rows if k.startswith("a:") and k not in seen_accounts]:
            batch.accounts[key[2:]] = None
            self.saved_ids.pop(key[2:], None)
        for key in [k for k in self.rows if k.startswith("s:") and k not in seen_sandboxes]:
            if key[2:] not in self.kept:
                batch.sandboxes[key[2:]] = None
        for owner in [*self.manifests, *self.pristine]:
            if owner not in owners:
                batch.filesystems[owner] = None
        self.stale = False
        self._commit(batch, force=True)

    # -- encoding ---------------------------------------------------------------------------

    def _sandboxes(self, batch: Batch, account: Account, scope: set[str], *, files: bool) -> None:
        saved = self.saved_ids.setdefault(account.api_key, set())
        for sandbox_id in scope:
            sandbox = account.sandboxes.get(sandbox_id)
            owner = "sandbox:" + sandbox_id
            if sandbox is None or RESTORED_STATUS[sandbox.status] is None:
                if "s:" + sandbox_id in self.rows:
                    batch.sandboxes[sandbox_id] = None
                    batch.filesystems[owner] = None
                saved.discard(sandbox_id)
                self.marks.pop(sandbox_id, None)
                continue
            directory = sandbox.machine.saved().get("directory")
            text = json.dumps(encode_sandbox(sandbox, directory))
            new = "s:" + sandbox_id not in self.rows
            if self.rows.get("s:" + sandbox_id) != text:
                batch.sandboxes[sandbox_id] = (account.api_key, text)
            saved.add(sandbox_id)
            self.marks[sandbox_id] = mark(sandbox)
            if not (files or new):
                continue
            fs = self.keeper.files(sandbox.machine)
            if fs is None:
                continue  # kept on disk by its runtime, or restored and not used since
            if new and self._from_image(sandbox):
                self.pristine[owner] = time.time()  # no row: nothing to walk, read or write
            elif owner in self.pristine:
                self._still_image(batch, owner, fs)
            else:
                self._filesystem(batch, owner, fs, self._source(sandbox, new))

    def _from_image(self, sandbox: Sandbox) -> bool:
        """Whether a new sandbox's files are the image's (not a fork, not from a template)."""
        if sandbox.forked_from is not None:
            return False
        account = self.world.account_of(sandbox.id)
        return account is not None and sandbox.spec.rootfs not in (
            account.resources.templates.rootfs_names()
        )

    def _still_image(self, batch: Batch, owner: str, fs: Any) -> None:
        """Snapshot a sandbox saved as the image: files written since get stored."""
        image = self._image()
        manifest = self.keeper.snapshot(
            fs, self.blobs, None, copied_from=image, copied_before=self.pristine[owner]
        )
        if not self.keeper.same_files(manifest, image):
            batch.filesystems[owner] = manifest

    def _source(self, sandbox: Sandbox, new: bool) -> tuple[Any, Manifest] | None:
        """A new fork's source and its manifest, when the source is unchanged since saved."""
        if not new or sandbox.forked_from is None:
            return None
        source = self.world.find_sandbox(sandbox.forked_from)
        manifest = self.manifests.get("sandbox:" + sandbox.forked_from)
        files = None if source is None else self.keeper.files(source.machine)
        if files is None or manifest is None:
            return None
        return files, manifest

    def _image(self) -> Manifest:
        """The snapshot of a fresh sandbox's files (made once)."""
        if self._fresh is None:
            self._fresh = self.keeper.fresh(self.blobs)
        return self._fresh

    def _account(self, batch: Batch, account: Account, position: int) -> None:
        clock = self.world.ctx.clock
        text = json.dumps(encode_account(account, clock))
        if self.rows.get("a:" + account.api_key) != text:
            batch.accounts[account.api_key] = (position, text)
        self.builds[account.api_key] = _builds(account)
        for template in account.resources.templates.items.values():
            owner = f"template:{template.id}"
            files = None if template.image is None else self.keeper.image_files(template.image)
            if files is not None and owner not in self.manifests:
                self._filesystem(batch, owner, files, None)

    def _buckets(self, batch: Batch) -> set[str]:
        resources = self.world.ctx.resources
        # Names the process runtime's bucket directories (a ``reset()`` draws another).
        space = json.dumps(resources.bucket_space)
        if self.rows.get("m:bucket_space") != space:
            batch.meta["bucket_space"] = space
        owners = set()
        for (endpoint, name), bucket in resources.buckets.items():
            for part, fs in self.keeper.bucket_files(bucket).items():
                owner = bucket_owner(endpoint, name, part)
                owners.add(owner)
                self._filesystem(batch, owner, fs, None)
        return owners

    def _filesystem(
        self,
        batch: Batch,
        owner: str,
        fs: Any,
        source: tuple[Any, Manifest] | None,
    ) -> None:
        keeper = self.keeper
        copied = source[1] if source is not None and keeper.unchanged(*source) else None
        previous = self.manifests.get(owner)
        manifest = keeper.snapshot(
            fs, self.blobs, previous, copied_from=copied, copied_before=time.time()
        )
        if manifest != previous:
            batch.filesystems[owner] = manifest

    # -- writing ----------------------------------------------------------------------------

    def _commit(self, batch: Batch, *, force: bool = False) -> None:
        """Hand ``batch`` (and the journal's events when due) to the writer's thread; what
        the store holds is taken to be written from now on (``take_failures`` says if not)."""
        journal = self.world.ctx.journal
        cleared = journal.generation != self._journal_generation
        due = self.events and (
            force or self._journal_wanted or time.monotonic() - self._flushed >= JOURNAL_EVERY
        )
        if not (batch or due or cleared):
            return
        events = list(self.events) if due or cleared else []
        del self.events[: len(events)]  # the journal's tap: the same list
        clock = self.world.ctx.clock
        offset = clock.time() - clock.now()
        data = encode_events(events)
        limit = journal.max_events
        requests = json.dumps(self.world.requests) if force else None

        def job(db: sqlite3.Connection) -> None:
            write(db, batch)
            if cleared:
                db.execute("DELETE FROM journal")
                self.journal_rows.clear()
            if events:  # on the writer's thread, the only user of ``journal_rows`` once serving
                write_journal(db, self.journal_rows, len(events), data, limit, offset)
            if requests is not None:  # else a restart reads it from the journal's last id
                db.execute("INSERT OR REPLACE INTO meta VALUES ('requests', ?)", (requests,))

        self.writer.add(job, events)
        self._journal_generation = journal.generation
        if events:
            self._flushed = time.monotonic()
            self._journal_wanted = False
        batch.remember(self.rows, self.manifests, self.pristine)

    # -- the writer's thread ----------------------------------------------------------------

    def _wake(self) -> None:
        """On the writer's thread: a transaction failed; take it up on the serving loop."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: ``close`` takes it up
                loop.call_soon_threadsafe(self.take_failures)

    def take_failures(self) -> None:
        """Report the transactions that failed and read what the store really holds, so the
        next save writes everything that differs from it."""
        failures = self.writer.take_failures()
        if not failures:
            return
        self.writer.drain()  # the store is still: read it as it is
        failures += self.writer.take_failures()
        for _, events in reversed(failures):
            self.events[:0] = events
        self.journal_rows, self.rows, self.saved_ids, self.manifests = read_back(self.store.db)
        for owner in self.manifests:
            self.pristine.pop(owner, None)
        self.marks.clear()
        self.stale = True
        self.on_error(f"cannot save the state to {self.store.directory}: {failures[0][0]}")

    def sync(self) -> None:
        """Wait until every change saved so far is written; report what failed."""
        self.writer.hand_over()
        self.writer.drain()
        self.take_failures()

    def close(self) -> None:
        """Write what is left and stop the writer's thread; nothing is written after."""
        timer, self._journal_timer = self._journal_timer, None
        if timer is not None:
            timer.cancel()
        self.writer.close()
        self.take_failures()
        self.closed = True


def _builds(account: Account) -> tuple[str, ...]:
    """The account's template builds running in real time (``Template.running``)."""
    return tuple(t.id for t in account.resources.templates.items.values() if t.running)
