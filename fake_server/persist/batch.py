"""The rows one save writes, and writing them: the store's side of ``saver``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

    from fake_server.persist.files import Manifest

__all__ = ["Batch", "write"]


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
