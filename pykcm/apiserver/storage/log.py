"""The durable log: every write the API server acknowledges, in one SQLite table.

Modelled on kine's log-structured table. Each row is one revision of one key;
the row id *is* the resourceVersion, so the global revision counter survives
restarts for free (the next revision is one past the largest row id ever
written, remembered in the `meta` table once compaction has removed rows).

Data flow: `Store` (store.py) groups the writes of many concurrent requests
into one batch and hands it to `append()` on a dedicated writer thread; one
transaction per batch amortises the commit, and its fsync, over every request
in it (group commit). Only after `append()` returns does the store apply the
batch to memory, answer the clients and notify watchers, so an acknowledged
write is on disk before anybody can see it. By default every commit is
fsynced (WAL with synchronous=FULL), as etcd fsyncs every commit: an
acknowledged write survives power loss. `fsync=False` (the CLI's
`--unsafe-no-fsync`, named after etcd's flag) keeps synchronous=NORMAL, which
survives a killed process but not power loss: for throwaway test servers.
The database file is created 0600 (it holds Secrets). `load()` replays the
table at start-up.

Compaction deletes rows that a later revision superseded (and tombstones) once
they fall out of the in-memory history window, so the file stays proportional
to the live objects plus the window.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from typing import NamedTuple

_SCHEMA = """
CREATE TABLE IF NOT EXISTS log (
    rv INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    prev_rv INTEGER NOT NULL DEFAULT 0,
    value BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
"""


class LogRow(NamedTuple):
    rv: int
    key: str
    deleted: bool
    prev_rv: int
    value: bytes


class SqliteLog:
    """One SQLite database file; used from a single writer thread after open()."""

    def __init__(self, path: str, *, fsync: bool = True) -> None:
        self.path = path
        self.fsync = fsync
        os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        # SQLite creates its -wal and -shm files with the database file's mode.
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        os.chmod(path, 0o600)
        # check_same_thread=False: the connection is created on the caller's
        # thread but used afterwards only by the store's single writer thread.
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'NORMAL'}")
        self._db.execute("PRAGMA temp_store=MEMORY")
        # A small page cache: reads are served from memory (store.py), SQLite only appends,
        # replays at start and deletes compacted rows; a large cache would hold a copy of
        # every recently written object in RSS.
        self._db.execute("PRAGMA cache_size=-2048")
        self._db.executescript(_SCHEMA)

    # -- start-up ---------------------------------------------------------------

    def meta(self, name: str, default: int = 0) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE name=?", (name,)).fetchone()
        return int(row[0]) if row else default

    def max_rv(self) -> int:
        row = self._db.execute("SELECT MAX(rv) FROM log").fetchone()
        top = int(row[0]) if row and row[0] is not None else 0
        return max(top, self.meta("max_rv"))

    def load(self) -> Iterator[LogRow]:
        """Every row in revision order (the replay the store rebuilds memory from)."""
        cur = self._db.execute("SELECT rv, key, deleted, prev_rv, value FROM log ORDER BY rv")
        while True:
            rows = cur.fetchmany(2000)
            if not rows:
                return
            for rv, key, deleted, prev_rv, value in rows:
                yield LogRow(rv, key, bool(deleted), prev_rv, value)

    # -- writer thread ----------------------------------------------------------

    def append(self, rows: Iterable[LogRow]) -> None:
        """Write one batch atomically: all rows or none."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(
                "INSERT INTO log (rv, key, deleted, prev_rv, value) VALUES (?, ?, ?, ?, ?)",
                ((r.rv, r.key, int(r.deleted), r.prev_rv, r.value) for r in rows),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def compact(self, rid: str, compact_rv: int, superseded: list[int], current_max: int) -> None:
        """Delete rows of resource `rid` no longer needed once its history up to
        compact_rv is given up.

        `superseded` lists the revisions (older versions and tombstones) the
        store knows nobody can ask for any more.
        """
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for i in range(0, len(superseded), 500):
                chunk = superseded[i : i + 500]
                db.execute(
                    f"DELETE FROM log WHERE rv IN ({','.join('?' * len(chunk))})", chunk
                )
            db.execute(
                "INSERT INTO meta(name, value) VALUES(?, ?) "
                "ON CONFLICT(name) DO UPDATE SET value=excluded.value",
                ("compact:" + rid, compact_rv),
            )
            # Keep the revision counter monotonic even if the newest row was a
            # tombstone that compaction just removed.
            db.execute(
                "INSERT INTO meta(name, value) VALUES('max_rv', ?) "
                "ON CONFLICT(name) DO UPDATE SET value=MAX(value, excluded.value)",
                (current_max,),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def checkpoint(self) -> None:
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        try:
            self.checkpoint()
        finally:
            self._db.close()
