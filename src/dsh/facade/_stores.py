"""Where `dsh.Agent` keeps its sessions: in memory (the default), JSONL files or SQLite."""

from __future__ import annotations

import os
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .._record import record

if TYPE_CHECKING:
    from ..persistence import MemoryBackend, SessionBackend

__all__ = ["JsonlStore", "MemoryStore", "SqliteStore", "Store"]


class Store(Protocol):
    """Opens the backend one runtime of an agent writes to (each runtime opens its own and
    closes it when it stops; the sessions stay)."""

    def open(self) -> SessionBackend: ...


@record(frozen=False)
class MemoryStore:
    """Sessions in this process, for as long as the store object lives (the default)."""

    _backend: MemoryBackend | None = field(default=None, repr=False)

    def open(self) -> SessionBackend:
        if self._backend is None:
            from ..persistence import MemoryBackend

            self._backend = MemoryBackend()
        return self._backend


@record
class JsonlStore:
    """Session logs as JSONL files under `root` (the CLI's format and layout)."""

    root: str | os.PathLike[str]

    def open(self) -> SessionBackend:
        from ..persistence import JsonlBackend

        return JsonlBackend(Path(self.root).expanduser())


@record
class SqliteStore:
    """Every session in one SQLite database file."""

    path: str | os.PathLike[str]

    def open(self) -> SessionBackend:
        from ..persistence import SqliteBackend

        return SqliteBackend(Path(self.path).expanduser())
