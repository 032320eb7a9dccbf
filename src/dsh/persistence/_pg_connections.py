"""psycopg 3 async connections for the PostgreSQL backend, on an event loop of its own.

The backend contract is synchronous (the seam calls backends from worker threads, and the
conformance suite calls them directly), so the backend runs its async connections on one
private loop thread and each call waits for its coroutine there: one thread multiplexes
every connection, and no connection is shared between calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Coroutine
from typing import TYPE_CHECKING, TypeVar

from .._lazy import extra_hint
from ._types import PersistenceError

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg.rows import TupleRow

__all__ = ["ConnectionPool", "PgLoop", "describe_url", "require_psycopg"]

T = TypeVar("T")


def require_psycopg() -> None:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise PersistenceError(
            f"the PostgreSQL session store needs dsh's postgres extra: {extra_hint('postgres')}"
        ) from None


def describe_url(url: str) -> str:
    """The URL without its password (for messages and the store id)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        info = conninfo_to_dict(url)
    except Exception:
        raise PersistenceError(
            "not a valid PostgreSQL connection URL (expected postgresql://user@host:port/db)"
        ) from None
    user = f"{info['user']}@" if info.get("user") else ""
    host = info.get("host") or "localhost"
    port = f":{info['port']}" if info.get("port") else ""
    return f"postgresql://{user}{host}{port}/{info.get('dbname') or ''}"


class PgLoop:
    """A daemon thread running an event loop; `run(coro)` waits for the result."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[object, None, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class ConnectionPool:
    """Up to `size` autocommit connections to `url`, opened on demand (on the pool's loop);
    a connection that broke is dropped, and the next caller opens a new one."""

    def __init__(self, url: str, size: int, *, where: str) -> None:
        self.url = url
        self.where = where
        self._idle: list[AsyncConnection[TupleRow]] = []
        self._slots = asyncio.Semaphore(size)
        self._all: set[AsyncConnection[TupleRow]] = set()
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        if "connect_timeout" not in conninfo_to_dict(url):
            self.url = make_conninfo(url, connect_timeout=10)  # an unreachable host fails

    async def connect(self) -> AsyncConnection[TupleRow]:
        """A new autocommit connection (not pooled): a clear error when it cannot open."""
        import psycopg

        try:
            return await psycopg.AsyncConnection.connect(self.url, autocommit=True)
        except psycopg.OperationalError as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise PersistenceError(f"cannot connect to {self.where}: {reason}") from None

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[TupleRow]]:
        async with self._slots:
            conn = self._idle.pop() if self._idle else None
            if conn is None:
                conn = await self.connect()
                self._all.add(conn)
            try:
                yield conn
            finally:
                if conn.broken or conn.closed:
                    self._all.discard(conn)
                    await conn.close()
                else:
                    self._idle.append(conn)

    async def close(self) -> None:
        for conn in list(self._all):
            with contextlib.suppress(Exception):
                await conn.close()
        self._all.clear()
        self._idle.clear()
