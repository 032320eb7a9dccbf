"""The PostgreSQL backend: the conformance suite, the schema, the writer lease and fencing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest

from dsh.persistence import (
    SESSION_PERSISTENCE,
    JsonlBackend,
    LeaseLostError,
    PersistenceError,
    PostgresBackend,
    Record,
    SessionBackend,
    SessionLockedError,
    SqliteBackend,
    StoredSessions,
)
from dsh.persistence._codec import records_of
from dsh.persistence.conformance import *  # noqa: F403
from dsh.persistence.conformance import BackendFactory, closed_turn
from dsh.profiles import CORE_ROWS, CompositionError, boot, load_profile
from dsh.session import Session, SessionHeader


@pytest.fixture
def backend_factory(postgres_url: str) -> Iterator[BackendFactory]:
    opened: list[PostgresBackend] = []

    def open_backend() -> SessionBackend:
        backend = PostgresBackend(postgres_url)
        opened.append(backend)
        return backend

    yield open_backend
    for backend in opened:
        backend.close()


def stored_session(backend: PostgresBackend, session_id: str) -> Session:
    session = Session.create(session_id, header=SessionHeader(session_id, 1_700_000_000_000))
    closed_turn(session, 1)
    backend.create(session.header, records_of(session.events), durable=True)
    return session


def more(session: Session) -> list[Record]:
    return records_of([session.append("todo/write", {"todos": []})])


@pytest.fixture
def backends(postgres_url: str) -> Iterator[Callable[[str], PostgresBackend]]:
    """Backends standing for writers in different processes, each named by its holder."""
    opened: list[PostgresBackend] = []

    def open_backend(holder: str) -> PostgresBackend:
        backend = PostgresBackend(postgres_url, holder=holder)
        opened.append(backend)
        return backend

    yield open_backend
    for backend in opened:
        backend.close()


def test_the_schema_is_versioned_and_a_newer_one_is_refused(
    postgres_url: str, backends: Callable[[str], PostgresBackend]
) -> None:
    backends("a")
    backends("b")  # opening again migrates nothing
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        versions = conn.execute("SELECT version FROM dsh_schema_version").fetchall()
        assert versions == [(1,), (2,)]
        conn.execute("INSERT INTO dsh_schema_version VALUES (3)")
    with pytest.raises(PersistenceError, match=r"schema version 3, newer .*: upgrade dsh"):
        backends("c")


def test_a_second_writer_fails_naming_the_holder(
    backends: Callable[[str], PostgresBackend],
) -> None:
    first, second = backends("worker-a"), backends("worker-b")
    session = stored_session(first, "s-lease")
    lease = first.acquire_writer("s-lease")
    assert lease.epoch == 1
    with pytest.raises(SessionLockedError, match=r"'s-lease' is being written by worker-a \(si"):
        second.acquire_writer("s-lease")
    with pytest.raises(SessionLockedError, match="this process"):
        first.acquire_writer("s-lease")
    records = more(session)
    with pytest.raises(SessionLockedError, match="worker-a"):
        second.append("s-lease", records, durable=True)  # unleased: refused too
    first.append("s-lease", records, durable=True)
    lease.release()
    assert second.acquire_writer("s-lease").epoch == 2
    second.append("s-lease", more(session), durable=True)
    assert second.read("s-lease").next_seq == session.seq


def test_a_writer_that_lost_its_lease_cannot_append(
    postgres_url: str, backends: Callable[[str], PostgresBackend]
) -> None:
    first, second = backends("worker-a"), backends("worker-b")
    session = stored_session(first, "s-fenced")
    lease = first.acquire_writer("s-fenced")
    assert first._lease_conn is not None
    pid = first._lease_conn.info.backend_pid
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))  # its connection drops
    taken = second.acquire_writer("s-fenced")  # the advisory lock went with it
    assert taken.epoch == lease.epoch + 1
    stale = more(session)
    with pytest.raises(LeaseLostError, match="taken over by worker-b"):
        first.append("s-fenced", stale, durable=True)  # the fencing epoch refuses it
    second.append("s-fenced", stale, durable=True)
    assert first.read("s-fenced").next_seq == session.seq
    stored_session(first, "s-other")
    first.acquire_writer("s-other")  # finds its lease connection dropped, and opens another
    with pytest.raises(LeaseLostError, match="connection that held this writer's lease"):
        first.append("s-fenced", more(session), durable=True)  # known lost locally now


async def test_the_store_is_chosen_by_the_row_or_the_environment(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def backend_of(row: dict[str, Any] | None = None) -> SessionBackend:
        profile = load_profile(base=[*CORE_ROWS[:2], {"id": "persistence", "name": "persistence"}])
        if row is not None:
            profile = profile.with_config("persistence", **row)
        ctx = await boot(profile)
        try:
            service = ctx.require(SESSION_PERSISTENCE)
            assert isinstance(service, StoredSessions)
            return service.backend
        finally:
            await ctx.owner.dispose()

    monkeypatch.setenv("DSH_SESSION_STORE", postgres_url)
    assert isinstance(await backend_of(), PostgresBackend)
    assert isinstance(await backend_of({"backend": "jsonl"}), JsonlBackend)  # the row wins
    monkeypatch.setenv("DSH_SESSION_STORE", f"sqlite:{tmp_path / 'db.sqlite3'}")
    assert isinstance(await backend_of(), SqliteBackend)
    assert isinstance(await backend_of({"url": postgres_url}), PostgresBackend)
    monkeypatch.setenv("DSH_SESSION_STORE", "postgress://typo")
    with pytest.raises(CompositionError, match="unknown session store 'postgress'"):
        await backend_of()
    monkeypatch.delenv("DSH_SESSION_STORE")
    assert isinstance(await backend_of(), JsonlBackend)
    with pytest.raises(CompositionError) as failed:
        await backend_of({"url": "postgresql://u:secret@127.0.0.1:1/x"})
    assert "cannot connect to postgresql://u@127.0.0.1:1/x: " in str(failed.value)
    assert "secret" not in str(failed.value)


def test_concurrent_first_leases_share_one_lease_connection(
    backends: Callable[[str], PostgresBackend],
) -> None:
    sessions = [stored_session(backends("creator"), f"s-{n}") for n in range(8)]
    writer = backends("writer")
    with ThreadPoolExecutor(8) as pool:  # as the seam's worker threads would
        list(pool.map(writer.acquire_writer, [s.id for s in sessions]))
    for session in sessions:
        writer.append(session.id, more(session), durable=True)  # every lease still holds
