"""The PostgreSQL backend (psycopg 3, async): one store shared by many processes and machines.

Tables (created and migrated by the backend, versioned in `dsh_schema_version`):
`dsh_sessions(id, header, cwd, created_at, next_seq)`, `dsh_events(session, seq, type, time,
body)` keyed by `(session, seq)` with `body` the event's JSONL line, and
`dsh_leases(session, epoch, holder, acquired_at)`, and `dsh_blobs(session, name, body)` (the
sessions' spill files).

One live writer per session: a writer takes the session's lease (`acquire_writer`), a
session-level advisory lock held by this backend's lease connection, and bumps the session's
fencing epoch. Every append of a leased session checks that epoch in the same statement, so
a writer that lost its lease (its connection dropped, and another writer took the session)
cannot append. Appends of a session this backend does not lease (the seam's `append`, a
repair) take the advisory lock for their transaction, so they fail while a writer elsewhere
holds it. A dead holder's lock goes with its connection.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ..llm import Json
from ..session import SessionHeader
from ._backend import RawLog, check_contiguous
from ._codec import encode_header, utf8_safe
from ._pg_connections import ConnectionPool, PgLoop, describe_url, require_psycopg
from ._types import (
    CorruptLogError,
    LeaseLostError,
    PersistenceError,
    Record,
    SeqMismatchError,
    SessionExistsError,
    SessionLocation,
    SessionLockedError,
    UnknownSessionError,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresBackend", "PostgresLease"]

SCHEMA_VERSION = 2

_MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE dsh_sessions (
            id text PRIMARY KEY,
            header text NOT NULL,
            cwd text,
            created_at bigint NOT NULL,
            next_seq bigint NOT NULL DEFAULT 0)""",
        """CREATE TABLE dsh_events (
            session text NOT NULL,
            seq bigint NOT NULL,
            type text NOT NULL,
            time bigint NOT NULL,
            body text NOT NULL,
            PRIMARY KEY (session, seq))""",
        """CREATE TABLE dsh_leases (
            session text PRIMARY KEY,
            epoch bigint NOT NULL,
            holder text NOT NULL,
            acquired_at timestamptz NOT NULL DEFAULT now())""",
        "CREATE INDEX dsh_sessions_by_creation ON dsh_sessions (created_at, id)",
    ),
    2: (
        """CREATE TABLE dsh_blobs (
            session text NOT NULL,
            name text NOT NULL,
            body bytea NOT NULL,
            PRIMARY KEY (session, name))""",
    ),
}

# The guard of a write: the writer's epoch still current (the lease row is share-locked, so
# a new writer's bump waits for this statement), or, unleased, nobody holding the session.
_LEASED = "EXISTS (SELECT 1 FROM dsh_leases WHERE session = %(id)s AND epoch = %(epoch)s FOR SHARE)"
_UNLEASED = "pg_try_advisory_xact_lock(%(key)s)"

_EVENTS = """e AS (
    INSERT INTO dsh_events (session, seq, type, time, body)
    SELECT s.id, u.seq, u.type, u.time, u.body FROM s,
        unnest(%(seqs)s::bigint[], %(types)s::text[], %(times)s::bigint[], %(bodies)s::text[])
        AS u(seq, type, time, body)
    RETURNING 1)"""

_CREATE = f"""WITH s AS (
    INSERT INTO dsh_sessions (id, header, cwd, created_at, next_seq)
    SELECT %(id)s, %(header)s, %(cwd)s, %(created_at)s, %(next)s WHERE {{guard}}
    RETURNING id), {_EVENTS}
SELECT count(*) FROM s"""

_APPEND = f"""WITH s AS (
    UPDATE dsh_sessions SET next_seq = %(next)s
    WHERE id = %(id)s AND next_seq = %(first)s AND {{guard}}
    RETURNING id), {_EVENTS}
SELECT count(*) FROM s"""

_READ = """SELECT header, (
    SELECT coalesce(string_agg(body, ',' ORDER BY seq), '') FROM dsh_events
    WHERE session = %(id)s AND seq >= %(from)s)
FROM dsh_sessions WHERE id = %(id)s"""

_TAKE = """WITH lock AS (SELECT pg_try_advisory_lock(%(key)s) AS got)
INSERT INTO dsh_leases (session, epoch, holder) SELECT %(id)s, 1, %(holder)s FROM lock WHERE got
ON CONFLICT (session) DO UPDATE
SET epoch = dsh_leases.epoch + 1, holder = EXCLUDED.holder, acquired_at = now()
RETURNING epoch"""


class PostgresLease(msgspec.Struct, frozen=True, eq=False):
    """A held writer lease: `epoch` fences every append of the session."""

    session_id: str
    epoch: int
    generation: int
    """Which lease connection holds the advisory lock (a new one after a reconnect)."""
    backend: PostgresBackend = msgspec.field()

    def release(self) -> None:
        self.backend.release_writer(self)


class PostgresBackend:
    """Sessions in a PostgreSQL database, shared by every process that opens the same URL.

    Each append or creation is one statement (one transaction), so a flush is atomic.
    `pool_size` connections serve reads and writes; one more holds the writer leases.
    """

    name = "postgres"

    def __init__(self, url: str, *, pool_size: int = 4, holder: str | None = None) -> None:
        require_psycopg()
        where = describe_url(url)
        self.url = url
        self.holder = holder or f"{socket.gethostname()} pid {os.getpid()}"
        self._loop = PgLoop("dsh-postgres")
        self._pool = ConnectionPool(url, pool_size, where=where)
        self._lease_conn: AsyncConnection[Any] | None = None
        self._generation = 0
        self._lease_opening = asyncio.Lock()
        self._leases: dict[str, PostgresLease | None] = {}
        """Held leases (None while one is being taken); changed on the pool's loop only."""
        try:
            schema = self._loop.run(self._open())
        except BaseException:
            self._loop.close()
            raise
        self.store_id = f"postgres:{where}#{schema}"
        self._key_prefix = f"dsh-session:{schema}:".encode()

    # -- setup -----------------------------------------------------------------------------

    async def _open(self) -> str:
        async with self._pool.connection() as conn, conn.transaction():
            # One migrating process at a time.
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(b"dsh-schema"),))
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS dsh_schema_version (version integer NOT NULL)"
            )
            cur = await conn.execute("SELECT coalesce(max(version), 0) FROM dsh_schema_version")
            current = (await _one(cur))[0]
            if current > SCHEMA_VERSION:
                raise PersistenceError(
                    f"{self._pool.where}: the session tables are at schema version {current}, "
                    f"newer than this dsh knows ({SCHEMA_VERSION}): upgrade dsh"
                )
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[version]:
                    await conn.execute(statement)
                await conn.execute("INSERT INTO dsh_schema_version VALUES (%s)", (version,))
            schema: str = (await _one(await conn.execute("SELECT current_schema()")))[0]
        await self._lease_connection()  # now: a writer's first lease needs no new connection
        return schema

    def locate(self, header: SessionHeader) -> SessionLocation:
        return SessionLocation(self.name, Path(self.where.removeprefix("postgresql://")))

    # -- the backend contract --------------------------------------------------------------

    def exists(self, session_id: str) -> bool:
        return self._loop.run(self._exists(session_id))

    async def _exists(self, session_id: str) -> bool:
        async with self._pool.connection() as conn:
            cur = await conn.execute("SELECT 1 FROM dsh_sessions WHERE id = %s", (session_id,))
            return await cur.fetchone() is not None

    def put_blob(self, session_id: str, name: str, data: bytes) -> None:
        """Store (or replace) a named blob of a session (its spill files)."""
        self._loop.run(self._put_blob(session_id, name, data))

    async def _put_blob(self, session_id: str, name: str, data: bytes) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                "INSERT INTO dsh_blobs (session, name, body) VALUES (%s, %s, %s) "
                "ON CONFLICT (session, name) DO UPDATE SET body = EXCLUDED.body",
                (session_id, name, data),
            )

    def get_blob(self, session_id: str, name: str) -> bytes | None:
        return self._loop.run(self._get_blob(session_id, name))

    async def _get_blob(self, session_id: str, name: str) -> bytes | None:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT body FROM dsh_blobs WHERE session = %s AND name = %s", (session_id, name)
            )
            row = await cur.fetchone()
        return None if row is None else bytes(row[0])

    def create(self, header: SessionHeader, records: Sequence[Record], *, durable: bool) -> None:
        check_contiguous(header.id, records, 0)
        params = {
            "header": utf8_safe(encode_header(header)),
            "cwd": None if header.cwd is None else header.cwd.encode("utf-8", "replace").decode(),
            "created_at": header.created_at,
            "next": len(records),
        }
        self._loop.run(self._write(_CREATE, header.id, records, params))

    def append(self, session_id: str, records: Sequence[Record], *, durable: bool) -> None:
        """Every commit is synchronous, so `durable` changes nothing here."""
        if not records:
            if not self.exists(session_id):
                raise UnknownSessionError(f"no stored session {session_id!r} in {self.where}")
            return
        first = records[0].seq
        check_contiguous(session_id, records, first)
        params = {"first": first, "next": records[-1].seq + 1}
        self._loop.run(self._write(_APPEND, session_id, records, params))

    async def _write(
        self, sql: str, session_id: str, records: Sequence[Record], params: dict[str, Any]
    ) -> None:
        import psycopg

        lease = self._leases.get(session_id)
        if lease is not None and (
            lease.generation != self._generation
            or self._lease_conn is None
            or self._lease_conn.broken
        ):
            raise LeaseLostError(
                f"session {session_id!r}: the connection that held this writer's lease was "
                "lost; it may no longer append (resume the session to continue)"
            )
        params = {
            **params,
            "id": session_id,
            "epoch": None if lease is None else lease.epoch,
            "key": self._key(session_id),
            "seqs": [r.seq for r in records],
            "types": [r.type for r in records],
            "times": [r.time for r in records],
            "bodies": [utf8_safe(r.text) for r in records],
        }
        statement = sql.format(guard=_UNLEASED if lease is None else _LEASED)
        async with self._pool.connection() as conn:
            try:
                cur = await conn.execute(statement, params)
            except psycopg.errors.UniqueViolation:
                raise SessionExistsError(f"session {session_id!r} is already stored") from None
            if (await _one(cur))[0] == 1:
                return
            raise await self._refused(conn, session_id, params, lease)

    async def _refused(
        self,
        conn: AsyncConnection[Any],
        session_id: str,
        params: Mapping[str, Any],
        lease: PostgresLease | None,
    ) -> PersistenceError:
        """Why a write changed nothing: the seq, the id, or the lease."""
        if "first" in params:
            cur = await conn.execute(
                "SELECT next_seq FROM dsh_sessions WHERE id = %s", (session_id,)
            )
            row = await cur.fetchone()
            if row is None:
                return UnknownSessionError(f"no stored session {session_id!r} in {self.where}")
            if row[0] != params["first"]:
                return SeqMismatchError(
                    f"session {session_id!r}: expected seq {row[0]}, got {params['first']}"
                )
        holder = await _holder(conn, session_id)
        if lease is not None:
            return LeaseLostError(
                f"session {session_id!r}: this writer's lease was taken over by {holder}; "
                "it may no longer append"
            )
        return SessionLockedError(session_id, holder)

    def sync(self, session_id: str) -> None:
        """Nothing to do: each write is a committed transaction."""

    def read(self, session_id: str, *, from_seq: int = 0, truncate_torn: bool = False) -> RawLog:
        row = self._loop.run(self._read(session_id, from_seq))
        if row is None:
            raise UnknownSessionError(f"no stored session {session_id!r} in {self.where}")
        try:
            header = json.loads(row[0])
            rows = json.loads("[" + row[1] + "]")
        except json.JSONDecodeError as exc:
            raise CorruptLogError(f"{self.where}: session {session_id!r}: {exc}") from None
        return RawLog(header, rows)

    async def _read(self, session_id: str, from_seq: int) -> tuple[str, str] | None:
        async with self._pool.connection() as conn:
            cur = await conn.execute(_READ, {"id": session_id, "from": from_seq})
            return await cur.fetchone()

    def headers(self) -> list[Mapping[str, Json]]:
        return [json.loads(h) for h in self._loop.run(self._headers())]

    async def _headers(self) -> list[str]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT header FROM dsh_sessions WHERE next_seq > 0 ORDER BY created_at, id"
            )
            return [h for (h,) in await cur.fetchall()]

    def close(self) -> None:
        if self._loop.loop.is_closed():
            return
        try:
            self._loop.run(self._close())
        finally:
            self._loop.close()

    async def _close(self) -> None:
        self._leases.clear()
        conn, self._lease_conn = self._lease_conn, None
        if conn is not None:
            await conn.close()  # its advisory locks go with it
        await self._pool.close()

    # -- the writer lease ------------------------------------------------------------------

    def acquire_writer(self, session_id: str, header: SessionHeader | None = None) -> PostgresLease:
        """Take the session's writer lease (`SessionLockedError` naming the holder when
        another writer has it) and bump its fencing epoch (`header` is not needed here)."""
        return self._loop.run(self._acquire(session_id))

    async def _acquire(self, session_id: str) -> PostgresLease:
        # Lease state changes only on the pool's loop; advisory locks are reentrant on one
        # connection, so this backend refuses its own second writer itself.
        if session_id in self._leases:
            raise SessionLockedError(session_id, f"this process ({self.holder})")
        self._leases[session_id] = None
        try:
            conn, row = await self._take(session_id)
            if row is None:
                raise SessionLockedError(session_id, await _holder(conn, session_id))
        except BaseException:
            del self._leases[session_id]
            raise
        lease = PostgresLease(session_id, row[0], self._generation, self)
        self._leases[session_id] = lease
        return lease

    async def _take(self, session_id: str) -> tuple[AsyncConnection[Any], Any]:
        """One round trip: the advisory lock, and when it was free the epoch bump (the
        new epoch, or None when another connection holds the lock)."""
        import psycopg

        params = {"key": self._key(session_id), "id": session_id, "holder": self.holder}
        conn = await self._lease_connection()
        try:
            try:
                cur = await conn.execute(_TAKE, params)
            except psycopg.OperationalError:
                if not conn.broken:
                    raise
                conn = await self._lease_connection()  # it had dropped: once more, anew
                cur = await conn.execute(_TAKE, params)
        except psycopg.Error:
            if not conn.broken:  # a session-level lock outlives the failed statement
                await conn.execute("SELECT pg_advisory_unlock(%(key)s)", params)
            raise
        return conn, await cur.fetchone()

    async def _lease_connection(self) -> AsyncConnection[Any]:
        async with self._lease_opening:  # concurrent acquisitions open one connection
            conn = self._lease_conn
            if conn is None or conn.broken or conn.closed:
                conn = await self._pool.connect()
                # Let the server notice a vanished client (a dead node) and free its leases.
                for name, value in (("idle", 10), ("interval", 5), ("count", 3)):
                    await conn.execute(f"SET tcp_keepalives_{name} = {value}")
                self._lease_conn = conn
                self._generation += 1
            return conn

    def release_writer(self, lease: PostgresLease) -> None:
        """Give the lease up (a lease lost with its connection is already free)."""
        if not self._loop.loop.is_closed():
            self._loop.run(self._release(lease))

    async def _release(self, lease: PostgresLease) -> None:
        if self._leases.get(lease.session_id) is not lease:
            return
        del self._leases[lease.session_id]
        conn = self._lease_conn
        if lease.generation == self._generation and conn is not None and not conn.broken:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (self._key(lease.session_id),))

    # -- helpers ---------------------------------------------------------------------------

    @property
    def where(self) -> str:
        return self._pool.where

    def _key(self, session_id: str) -> int:
        return _lock_key(self._key_prefix + session_id.encode("utf-8", "surrogatepass"))


def _lock_key(data: bytes) -> int:
    """A 64-bit advisory lock key (collisions only make two sessions wait for each other)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big", signed=True)


async def _holder(conn: AsyncConnection[Any], session_id: str) -> str:
    cur = await conn.execute(
        "SELECT holder, acquired_at FROM dsh_leases WHERE session = %s", (session_id,)
    )
    row = await cur.fetchone()
    if row is None:
        return "another writer"
    return f"{row[0]} (since {row[1]:%Y-%m-%d %H:%M:%S %Z})"


async def _one(cur: Any) -> Any:
    row = await cur.fetchone()
    assert row is not None
    return row
