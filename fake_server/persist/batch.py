"""The rows one save writes, writing them and reading them back: the store's side of
``saver``."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

    from fake_server.runtime.api import Snapshot as Manifest

__all__ = ["Batch", "read_back", "write", "write_journal"]


@dataclass
class Batch:
    """The rows one transaction writes (``None``: delete the row)."""

    accounts: dict[str, tuple[int, str] | None] = field(default_factory=dict)
    sandboxes: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    filesystems: dict[str, Manifest | str | None] = field(default_factory=dict)
    #: Rows of the ``meta`` table (JSON text by key).
    meta: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.accounts or self.sandboxes or self.filesystems or self.meta)

    def remember(
        self, rows: dict[str, str], manifests: dict[str, Manifest], pristine: dict[str, float]
    ) -> None:
        """Update the saver's copy of what the store holds (``Saver.rows`` and friends)."""
        for key, text in self.meta.items():
            rows["m:" + key] = text
        for key, account_row in self.accounts.items():
            if account_row is None:
                rows.pop("a:" + key, None)
            else:
                rows["a:" + key] = account_row[1]
        for sandbox_id, sandbox_row in self.sandboxes.items():
            if sandbox_row is None:
                rows.pop("s:" + sandbox_id, None)
            else:
                rows["s:" + sandbox_id] = sandbox_row[1]
        for owner, manifest in self.filesystems.items():
            if manifest is None:
                manifests.pop(owner, None)
                pristine.pop(owner, None)
            elif isinstance(manifest, str):
                manifests.pop(owner, None)
            else:
                manifests[owner] = manifest
                pristine.pop(owner, None)


def write(db: sqlite3.Connection, batch: Batch) -> None:
    for key, text in batch.meta.items():
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, text))
    for key, account_row in batch.accounts.items():
        if account_row is None:
            db.execute("DELETE FROM accounts WHERE key = ?", (key,))
        else:
            db.execute("INSERT OR REPLACE INTO accounts VALUES (?, ?, ?)", (key, *account_row))
    for sandbox_id, sandbox_row in batch.sandboxes.items():
        if sandbox_row is None:
            db.execute("DELETE FROM sandboxes WHERE id = ?", (sandbox_id,))
        else:
            db.execute(
                "INSERT OR REPLACE INTO sandboxes VALUES (?, ?, ?)", (sandbox_id, *sandbox_row)
            )
    for owner, manifest in batch.filesystems.items():
        if manifest is None:
            db.execute("DELETE FROM filesystems WHERE owner = ?", (owner,))
        else:
            db.execute(
                "INSERT OR REPLACE INTO filesystems VALUES (?, ?)", (owner, json.dumps(manifest))
            )


def write_journal(
    db: sqlite3.Connection,
    rows: deque[tuple[int, int]],
    count: int,
    data: str,
    limit: int | None,
    offset: float,
) -> None:
    """One journal row of ``count`` events; the oldest rows go once the rest holds ``limit``
    events (``rows``: ``(seq, count)`` of the rows, oldest first)."""
    cursor = db.execute(
        "INSERT INTO journal (count, offset, data) VALUES (?, ?, ?)", (count, offset, data)
    )
    rows.append((int(cursor.lastrowid or 0), count))
    total = sum(n for _, n in rows)
    while limit is not None and len(rows) > 1 and total - rows[0][1] >= limit:
        seq, dropped = rows.popleft()
        total -= dropped
        db.execute("DELETE FROM journal WHERE seq = ?", (seq,))


def read_back(
    db: sqlite3.Connection,
) -> tuple[deque[tuple[int, int]], dict[str, str], dict[str, set[str]], dict[str, Manifest]]:
    """What the store holds, as the saver keeps it: the journal's rows, the rows by key
    (``a:``, ``s:``, ``m:bucket_space``), the sandbox ids by account key and the manifests."""
    journal_rows: deque[tuple[int, int]] = deque(db.execute("SELECT seq, count FROM journal"))
    rows = {"a:" + key: data for key, _, data in db.execute("SELECT * FROM accounts")}
    saved_ids: dict[str, set[str]] = {}
    for sandbox_id, account, data in db.execute("SELECT * FROM sandboxes"):
        rows["s:" + sandbox_id] = data
        saved_ids.setdefault(account, set()).add(sandbox_id)
    for key, value in db.execute("SELECT key, value FROM meta WHERE key = 'bucket_space'"):
        rows["m:" + key] = value
    manifests: dict[str, Manifest] = {}
    for owner, text in db.execute("SELECT owner, data FROM filesystems"):
        manifest = json.loads(text)
        if isinstance(manifest, list):
            manifests[owner] = manifest
    return journal_rows, rows, saved_ids, manifests
