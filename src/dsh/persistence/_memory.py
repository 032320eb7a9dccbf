"""The in-memory backend: logs kept in this process for as long as the backend object lives."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..llm import Json
from ..session import SessionHeader
from ._backend import RawLog, check_contiguous
from ._codec import encode_header
from ._types import (
    Record,
    SessionExistsError,
    SessionLocation,
    UnknownSessionError,
)

__all__ = ["MemoryBackend"]


class MemoryBackend:
    """Sessions in memory: what `dsh.Agent` uses unless told where to store them.

    Records are kept as the text they were given, like the other backends, so a log moves
    to JSONL or SQLite unchanged. `close()` keeps the data: one backend may serve several
    runtimes in turn (each `run_sync` of an agent boots its own), and the logs go when the
    object does.
    """

    name = "memory"

    def __init__(self) -> None:
        self.store_id = f"memory:{id(self):x}"
        self._lock = threading.Lock()
        self._logs: dict[str, tuple[str, int, list[Record]]] = {}

    def locate(self, header: SessionHeader) -> SessionLocation:
        return SessionLocation(self.name, Path(f"<memory>/{header.id}"))

    def exists(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._logs

    def create(self, header: SessionHeader, records: Sequence[Record], *, durable: bool) -> None:
        with self._lock:
            if header.id in self._logs:
                raise SessionExistsError(f"session {header.id!r} is already stored")
            check_contiguous(header.id, records, 0)
            self._logs[header.id] = (encode_header(header), header.created_at, list(records))

    def append(self, session_id: str, records: Sequence[Record], *, durable: bool) -> None:
        with self._lock:
            log = self._logs.get(session_id)
            if log is None:
                raise UnknownSessionError(f"no stored session {session_id!r} in memory")
            stored = log[2]
            check_contiguous(session_id, records, stored[-1].seq + 1 if stored else 0)
            stored.extend(records)

    def sync(self, session_id: str) -> None:
        """Nothing to do: memory is as durable as it gets."""

    def read(self, session_id: str, *, from_seq: int = 0, truncate_torn: bool = False) -> RawLog:
        with self._lock:
            log = self._logs.get(session_id)
            if log is None:
                raise UnknownSessionError(f"no stored session {session_id!r} in memory")
            header, _, stored = log
            texts = [r.text for r in stored if r.seq >= from_seq]
        return RawLog(json.loads(header), [json.loads(t) for t in texts])

    def headers(self) -> list[Mapping[str, Json]]:
        with self._lock:
            logs = sorted(
                (
                    (created, sid, header)
                    for sid, (header, created, rows) in self._logs.items()
                    if rows
                )
            )
        return [json.loads(header) for _, _, header in logs]

    def close(self) -> None:
        """Keeps the logs (see the class docstring)."""
