"""The backend conformance suite, over the JSONL and SQLite backends."""

from pathlib import Path

import pytest

from dsh.persistence import JsonlBackend, SessionBackend, SqliteBackend
from dsh.persistence.conformance import *  # noqa: F403
from dsh.persistence.conformance import BackendFactory


@pytest.fixture(params=["jsonl", "jsonl-zstd", "sqlite"])
def backend_factory(request: pytest.FixtureRequest, tmp_path: Path) -> BackendFactory:
    def open_backend() -> SessionBackend:
        if request.param == "sqlite":
            return SqliteBackend(tmp_path / "sessions.sqlite3")
        compression = "zstd" if request.param == "jsonl-zstd" else "none"
        return JsonlBackend(tmp_path / "sessions", compression=compression)

    return open_backend
