"""The state directory: checked, locked, and its SQLite database (WAL mode, one schema version).

Layout of ``--state-dir DIR``: ``state.sqlite3`` (accounts, sandboxes, resources, file
manifests, journal), ``blobs/`` (bashkit file contents, ``files``), ``sandboxes/`` (the
process runtime's sandbox directories) and ``lock`` (held while a fake uses the directory).
A database that cannot be read is moved aside with those directories into
``corrupt-<time>/`` and reported; a database of a newer schema is refused.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from fake_server.hostfiles import create_new, open_own, write_whole

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = ["DB_NAME", "MIN_FREE_BYTES", "SCHEMA_VERSION", "StateDirError", "Store"]

#: Bumped whenever the tables or the JSON they hold change incompatibly.
SCHEMA_VERSION = 1
DB_NAME = "state.sqlite3"
#: Below this much free space the directory is refused: a write could fail half-way.
MIN_FREE_BYTES = 16 * 1024 * 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS accounts (key TEXT PRIMARY KEY, position INTEGER, data TEXT);
CREATE TABLE IF NOT EXISTS sandboxes (id TEXT PRIMARY KEY, account TEXT, data TEXT);
CREATE TABLE IF NOT EXISTS filesystems (owner TEXT PRIMARY KEY, data TEXT);
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY, count INTEGER, offset REAL, data TEXT
);
"""


#: The files the fake writes in the state directory under fixed names.
_OWN_FILES = ("lock", DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm", DB_NAME + "-journal")


class StateDirError(Exception):
    """The state directory cannot be used; the message names the path and the cause."""


def prepare(directory: Path) -> None:
    """Create ``directory`` if needed and check it is ours, writable and not full."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        raise StateDirError(f"state directory {directory} is not a directory") from None
    except OSError as exc:
        raise StateDirError(
            f"cannot create state directory {directory}: {exc.strerror or exc}"
        ) from None
    if not directory.is_dir():
        raise StateDirError(f"state directory {directory} is not a directory")
    owner, me = directory.stat().st_uid, os.geteuid()
    if owner != me:
        raise StateDirError(
            f"state directory {directory} is owned by uid {owner}, not by this user "
            f"(uid {me}); use a directory of your own"
        )
    probe: Path | None = None
    try:
        fd, probe = create_new(directory, ".write-probe-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(b"\0" * 4096)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        if probe is not None:
            with contextlib.suppress(OSError):
                probe.unlink()
        cause = "read-only" if exc.errno == errno.EROFS else "not writable"
        raise StateDirError(
            f"state directory {directory} is {cause}: {exc.strerror or exc}"
        ) from None
    probe.unlink()
    _own_files(directory)
    stats = os.statvfs(directory)
    free = stats.f_bavail * stats.f_frsize
    if free < MIN_FREE_BYTES:
        raise StateDirError(
            f"state directory {directory} is on a full disk: {free // 1024} KiB free, "
            f"{MIN_FREE_BYTES // (1024 * 1024)} MiB needed"
        )


class Store:
    """The open, locked state directory and its database."""

    def __init__(self, directory: Path) -> None:
        """Raises ``StateDirError``; ``notes`` says what was done to make it usable."""
        self.directory = directory
        self.notes: list[str] = []
        prepare(directory)
        self._lock = _lock(directory)
        try:
            self.db = self._open()
        except BaseException:
            os.close(self._lock)
            raise

    def _open(self) -> sqlite3.Connection:
        path = self.directory / DB_NAME
        try:
            return _connect(path)
        except sqlite3.DatabaseError as exc:
            aside = self._move_aside(str(exc))
            self.notes.append(
                f"state database {path} could not be read ({exc}); moved it aside to "
                f"{aside} and started empty"
            )
            return _connect(path)

    def _move_aside(self, reason: str) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = self.directory / f"corrupt-{stamp}"
        suffix = 1
        while aside.exists():
            suffix += 1
            aside = self.directory / f"corrupt-{stamp}-{suffix}"
        aside.mkdir(mode=0o700)
        for name in (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm", "blobs", "sandboxes"):
            source = self.directory / name
            if source.exists():
                source.rename(aside / name)
        write_whole(aside / "REASON", (reason + "\n").encode())
        return aside

    # -- reading and writing ------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One change: everything inside commits together or not at all."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def meta(self, key: str, default: Any = None) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def rows(self, table: str) -> list[tuple[Any, ...]]:
        order = {"accounts": "position", "journal": "seq"}.get(table, "rowid")
        return list(self.db.execute(f"SELECT * FROM {table} ORDER BY {order}"))

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.db.close()
        os.close(self._lock)


def _connect(path: Path) -> sqlite3.Connection:
    """Open and check the database; ``StateDirError`` for one of a newer schema."""
    if not path.exists():  # made here, mode 0600: it holds API keys and disk credentials
        os.close(open_own(path, os.O_RDWR | os.O_CREAT | os.O_EXCL))
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        check = db.execute("PRAGMA quick_check").fetchone()
        if check is None or check[0] != "ok":
            raise sqlite3.DatabaseError(f"integrity check failed: {check and check[0]}")
        db.executescript(_SCHEMA)
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            db.execute(
                "INSERT INTO meta VALUES ('schema_version', ?)", (json.dumps(SCHEMA_VERSION),)
            )
        else:
            version = json.loads(row[0])
            if not isinstance(version, int):
                raise sqlite3.DatabaseError(f"schema version is {version!r}, not a number")
            if version > SCHEMA_VERSION:
                raise StateDirError(
                    f"state database {path} has schema version {version}, newer than this "
                    f"createos-fake reads ({SCHEMA_VERSION}); upgrade pytest-createos or use "
                    "another --state-dir"
                )
    except BaseException:
        db.close()
        raise
    return db


def _own_files(directory: Path) -> None:
    """``StateDirError`` when a name the fake writes in ``directory`` holds a symlink or a
    special file: SQLite and the lock would write through it, into whatever it names."""
    for name in _OWN_FILES:
        path = directory / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise StateDirError(
                f"state directory {directory} holds {name} that is a symlink or not a regular "
                "file; the fake writes only files of its own there: remove it"
            )


def _lock(directory: Path) -> int:
    fd = open_own(directory / "lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise StateDirError(
            f"state directory {directory} is in use by another createos-fake (pid {holder})"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd
