"""The backend conformance suite, over the JSONL and SQLite backends."""

from pathlib import Path
from typing import Any

import pytest

from dsh.persistence import JsonlBackend, MemoryBackend, SessionBackend, SqliteBackend
from dsh.persistence.conformance import *  # noqa: F403
from dsh.persistence.conformance import BackendFactory


@pytest.fixture(params=["jsonl", "jsonl-zstd", "sqlite", "memory"])
def backend_factory(request: pytest.FixtureRequest, tmp_path: Path) -> BackendFactory:
    memory = MemoryBackend()

    def open_backend() -> SessionBackend:
        if request.param == "memory":
            return memory  # one store: "opening" it again is the same object
        if request.param == "sqlite":
            return SqliteBackend(tmp_path / "sessions.sqlite3")
        compression = "zstd" if request.param == "jsonl-zstd" else "none"
        return JsonlBackend(tmp_path / "sessions", compression=compression)

    return open_backend


def test_sqlite_recovers_from_a_failed_commit(tmp_path: Path) -> None:
    import sqlite3

    from dsh.persistence._codec import records_of
    from dsh.persistence.conformance import closed_turn
    from dsh.session import Session, SessionHeader

    backend = SqliteBackend(tmp_path / "sessions.sqlite3")
    session = Session.create("s-commit", header=SessionHeader("s-commit", 1))
    backend.create(session.header, [], durable=True)
    closed_turn(session, 1)
    real = backend._db

    class FailingCommit:
        failures = 1

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def execute(self, sql: str, *args: Any) -> Any:
            if sql == "COMMIT" and self.failures:
                self.failures -= 1
                raise sqlite3.OperationalError("disk I/O error (simulated)")
            return real.execute(sql, *args)

    backend._db = FailingCommit()  # type: ignore[assignment]
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        backend.append("s-commit", records_of(session.events), durable=True)
    backend.append("s-commit", records_of(session.events), durable=True)  # the retry
    assert backend.read("s-commit").next_seq == session.seq
    backend.close()
