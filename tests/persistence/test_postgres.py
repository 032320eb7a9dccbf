"""The PostgreSQL backend: the conformance suite, the schema, the writer lease and fencing."""

from __future__ import annotations

import pytest

from dsh.persistence import PostgresBackend, SessionBackend
from dsh.persistence.conformance import *  # noqa: F403
from dsh.persistence.conformance import BackendFactory


@pytest.fixture
def backend_factory(postgres_url: str) -> BackendFactory:
    opened: list[PostgresBackend] = []

    def open_backend() -> SessionBackend:
        backend = PostgresBackend(postgres_url)
        opened.append(backend)
        return backend

    yield open_backend
    for backend in opened:
        backend.close()
