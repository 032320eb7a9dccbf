"""The SQLite backend (stdlib `sqlite3`, WAL): events keyed by (session, seq), a headers table."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..llm import Json, clean_text, json_bytes
from ..session import SessionHeader
from ..workspace import open_private, private_dirs
from ._backend import RawLog, check_contiguous
from ._codec import encode_header
from ._jsonl import escape_id, write_side_file
from ._lease import FileLease
from ._types import (
    CorruptLogError,
    Record,
    Salvage,
    SessionExistsError,
    SessionLocation,
    UnknownSessionError,
)

__all__ = ["SqliteBackend"]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    header TEXT NOT NULL,
    cwd TEXT,
    created_at INTEGER NOT NULL,
    next_seq INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS events (
    session TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    time INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blobs (
    session TEXT NOT NULL,
    name TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (session, name)
) WITHOUT ROWID;
"""


class SqliteBackend:
    """All sessions in one SQLite database (WAL journal, `synchronous=FULL`).

    `body` holds each event's log line verbatim, so a log moves between this backend and
    JSONL unchanged. One connection is shared by the worker threads behind a lock; several
    processes may open the same file (SQLite serializes their writes).
    """

    name = "sqlite"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        private_dirs(self.path.parent)
        # A new database is made 0600 before SQLite opens it (its -wal and -shm files take
        # the database's mode); an existing one is left as it is.
        with contextlib.suppress(FileExistsError):
            os.close(open_private(self.path))
        self.store_id = f"sqlite:{self.path.resolve()}"
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=30.0
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION):
            raise CorruptLogError(f"{self.path}: unsupported schema version {version}")
        self._db.executescript(_SCHEMA)
        self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # a failed COMMIT may leave it open: never reuse it so
                    db.execute("ROLLBACK")
                raise

    def locate(self, header: SessionHeader) -> SessionLocation:
        return SessionLocation(self.name, self.path)

    def acquire_writer(self, session_id: str, header: SessionHeader | None = None) -> FileLease:
        """A lock file per session beside the database: `<database>.locks/<id>.lock`."""
        if header is None and not self.exists(session_id):
            raise UnknownSessionError(f"no stored session {session_id!r} in {self.path}")
        path = self.path.with_name(self.path.name + ".locks") / f"{escape_id(session_id)}.lock"
        return FileLease(path, session_id)

    def exists(self, session_id: str) -> bool:
        with self._lock:
            row = self._db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return row is not None

    def create(self, header: SessionHeader, records: Sequence[Record], *, durable: bool) -> None:
        with self._transaction() as db:
            try:
                db.execute(
                    "INSERT INTO sessions (id, header, cwd, created_at) VALUES (?, ?, ?, ?)",
                    (header.id, encode_header(header), _cwd(header), header.created_at),
                )
            except sqlite3.IntegrityError:
                raise SessionExistsError(f"session {header.id!r} is already stored") from None
            self._insert(db, header.id, records, 0)

    def append(self, session_id: str, records: Sequence[Record], *, durable: bool) -> None:
        with self._transaction() as db:
            row = db.execute("SELECT next_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise UnknownSessionError(f"no stored session {session_id!r} in {self.path}")
            self._insert(db, session_id, records, row[0])

    def _insert(
        self, db: sqlite3.Connection, session_id: str, records: Sequence[Record], first: int
    ) -> None:
        check_contiguous(session_id, records, first)
        if not records:
            return
        db.executemany(
            "INSERT INTO events (session, seq, type, time, body) VALUES (?, ?, ?, ?, ?)",
            [(session_id, r.seq, r.type, r.time, r.text) for r in records],
        )
        db.execute(
            "UPDATE sessions SET next_seq = ? WHERE id = ?", (records[-1].seq + 1, session_id)
        )

    def sync(self, session_id: str) -> None:
        """Nothing to do: every commit is synced (`synchronous=FULL`)."""

    def read(self, session_id: str, *, from_seq: int = 0, truncate_torn: bool = False) -> RawLog:
        with self._lock:
            header, stored = self._rows(self._db, session_id, from_seq)
        log = _parsed(self.path, session_id, header, stored)
        if isinstance(log, str):
            raise CorruptLogError(log)
        return log

    def _rows(
        self, db: sqlite3.Connection, session_id: str, from_seq: int = 0
    ) -> tuple[str, list[tuple[int, str]]]:
        row = db.execute("SELECT header FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise UnknownSessionError(f"no stored session {session_id!r} in {self.path}")
        stored = db.execute(
            "SELECT seq, body FROM events WHERE session = ? AND seq >= ? ORDER BY seq",
            (session_id, from_seq),
        ).fetchall()
        return row[0], stored

    def salvage(self, session_id: str, keep: Callable[[RawLog], int]) -> Salvage:
        """Keep the rows of the valid prefix; the rest (their bodies, one per line) goes to
        `<database>.rejected/<id>-<time>.jsonl`, then is deleted."""
        with self._transaction() as db:
            header, stored = self._rows(db, session_id)
            log = _parsed(self.path, session_id, header, stored, prefix=True)
            if isinstance(log, str):
                raise CorruptLogError(f"{log}: nothing can be kept")
            kept = keep(log)
            rest = stored[kept:]
            if not rest:
                return Salvage(self.path, kept)
            side = self.path.with_name(self.path.name + ".rejected")
            private_dirs(side)
            side /= f"{escape_id(session_id)}-{time.strftime('%Y%m%dT%H%M%S')}.jsonl"
            data = json_bytes("".join(body + "\n" for _, body in rest))
            write_side_file(side, data)
            db.execute(
                "DELETE FROM events WHERE session = ? AND seq >= ?", (session_id, rest[0][0])
            )
            db.execute("UPDATE sessions SET next_seq = ? WHERE id = ?", (kept, session_id))
        return Salvage(self.path, kept, len(rest), len(data), side)

    def put_blob(self, session_id: str, name: str, data: bytes) -> None:
        """Store (or replace) a named blob of a session (its spill files)."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO blobs (session, name, body) VALUES (?, ?, ?)",
                (session_id, name, data),
            )

    def get_blob(self, session_id: str, name: str) -> bytes | None:
        with self._lock:
            row = self._db.execute(
                "SELECT body FROM blobs WHERE session = ? AND name = ?", (session_id, name)
            ).fetchone()
        return None if row is None else bytes(row[0])

    def headers(self) -> list[Mapping[str, Json]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT header FROM sessions WHERE next_seq > 0 ORDER BY created_at, id"
            ).fetchall()
        return [json.loads(h) for (h,) in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _cwd(header: SessionHeader) -> str | None:
    """The cwd column (informational; the header keeps the exact value)."""
    return None if header.cwd is None else clean_text(header.cwd)


def _parsed(
    path: Path, session_id: str, header: str, stored: list[tuple[int, str]], *, prefix: bool = False
) -> RawLog | str:
    """The log of `stored` rows, or what is wrong with it; with `prefix`, the rows that parse
    up to the first that does not."""
    source = f"{path}: session {session_id!r}"
    seqs = [seq for seq, _ in stored]

    def locate(index: int) -> str:
        return f"{source}, header" if index < 0 else f"{source}, seq {seqs[index]}"

    try:
        parsed_header = json.loads(header)
    except ValueError as exc:
        return f"{locate(-1)}: not JSON ({exc})"
    try:
        rows = json.loads("[" + ",".join(body for _, body in stored) + "]")
    except ValueError:
        rows = []
        for index, (_, body) in enumerate(stored):
            try:
                rows.append(json.loads(body))
            except ValueError as exc:
                if prefix:
                    break
                return f"{locate(index)}: not JSON ({exc})"
    return RawLog(parsed_header, rows, 0, source, locate)
