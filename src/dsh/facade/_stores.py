"""Where `dsh.Agent` keeps its sessions: in memory (the default), JSONL files or SQLite."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import msgspec

from ..persistence import JsonlBackend, MemoryBackend, SqliteBackend

if TYPE_CHECKING:
    from ..persistence import MemoryBackend, SessionBackend

__all__ = ["JsonlStore", "MemoryStore", "SqliteStore", "Store"]


class Store(Protocol):
    """Opens the backend one runtime of an agent writes to (each runtime opens its own and
    closes it when it stops; the sessions stay)."""

    def open(self) -> SessionBackend: ...


class MemoryStore(msgspec.Struct):
    """Sessions in this process, for as long as the store object lives (the default)."""

    _backend: MemoryBackend | None = msgspec.field(default=None)

    def open(self) -> SessionBackend:
        if self._backend is None:
            self._backend = MemoryBackend()
        return self._backend


class JsonlStore(msgspec.Struct, frozen=True):
    """Session logs as JSONL files under `root` (the CLI's format and layout)."""

    root: str | os.PathLike[str]

    def open(self) -> SessionBackend:
        return JsonlBackend(Path(self.root).expanduser())


class SqliteStore(msgspec.Struct, frozen=True):
    """Every session in one SQLite database file."""

    path: str | os.PathLike[str]

    def open(self) -> SessionBackend:
        return SqliteBackend(Path(self.path).expanduser())
