"""The in-memory backend: logs kept in this process for as long as the backend object lives."""

from __future__ import annotations

import json
import threading
import zlib
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
    to JSONL or SQLite unchanged: each appended batch as its lines, compressed (zlib, the
    fastest level). A live session holds its log as objects already; the store's copy of it
    then costs a fraction of that, not as much again (a streamed answer's deltas and each
    request header's tools compress well). `close()` keeps the data: one backend may serve
    several runtimes in turn (each `run_sync` of an agent boots its own), and the logs go
    when the object does.
    """

    name = "memory"
    inline_writes = True
    """Every write is a compression and a list append (a sync, nothing): made on the event
    loop, durable or not, with no thread's hand-off."""

    def __init__(self) -> None:
        self.store_id = f"memory:{id(self):x}"
        self._lock = threading.Lock()
        self._logs: dict[str, _Log] = {}

    def locate(self, header: SessionHeader) -> SessionLocation:
        return SessionLocation(self.name, Path(f"<memory>/{header.id}"))

    def exists(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._logs

    def create(self, header: SessionHeader, records: Sequence[Record], *, durable: bool) -> None:
        check_contiguous(header.id, records, 0)
        log = _Log(encode_header(header), header.created_at)
        log.add(_batch(records))
        with self._lock:
            if header.id in self._logs:
                raise SessionExistsError(f"session {header.id!r} is already stored")
            self._logs[header.id] = log

    def append(self, session_id: str, records: Sequence[Record], *, durable: bool) -> None:
        batch = _batch(records)  # compressed outside the lock
        with self._lock:
            log = self._logs.get(session_id)
            if log is None:
                raise UnknownSessionError(f"no stored session {session_id!r} in memory")
            check_contiguous(session_id, records, log.next_seq)
            log.add(batch)

    def sync(self, session_id: str) -> None:
        """Nothing to do: memory is as durable as it gets."""

    def read(self, session_id: str, *, from_seq: int = 0, truncate_torn: bool = False) -> RawLog:
        with self._lock:
            log = self._logs.get(session_id)
            if log is None:
                raise UnknownSessionError(f"no stored session {session_id!r} in memory")
            header, batches = log.header, list(log.batches)
        rows: list[Mapping[str, Json]] = []
        for first, count, packed in batches:
            if first + count <= from_seq:
                continue
            lines = zlib.decompress(packed).decode("utf-8").split("\n")
            rows += [json.loads(line) for line in lines[max(0, from_seq - first) :]]
        return RawLog(json.loads(header), rows)

    def headers(self) -> list[Mapping[str, Json]]:
        with self._lock:
            logs = sorted(
                (log.created_at, sid, log.header) for sid, log in self._logs.items() if log.next_seq
            )
        return [json.loads(header) for _, _, header in logs]

    def close(self) -> None:
        """Keeps the logs (see the class docstring)."""


Batch = tuple[int, int, bytes]
"""Records as stored: the first seq, how many, and their lines compressed."""


def _batch(records: Sequence[Record]) -> Batch | None:
    if not records:
        return None
    lines = "\n".join([r.text for r in records]).encode("utf-8")  # a line holds no newline
    return records[0].seq, len(records), zlib.compress(lines, 1)


MERGE = 8
"""Batches written apart that are compressed again as one: each write is a step's few
records, which compress poorly alone (a 6-step `read` session of `bench/sessions.py`: its
copy 12.5 KiB in 37 blocks written apart, 9 KiB in 13 merged)."""


class _Log:
    """One stored session: its header line and its records, batch by batch (the latest
    `MERGE` batches written apart are merged into one)."""

    __slots__ = ("apart", "batches", "created_at", "header", "next_seq")

    def __init__(self, header: str, created_at: int) -> None:
        self.header = header
        self.created_at = created_at
        self.batches: list[Batch] = []
        self.apart = 0
        """How many of the last batches were written apart (not merged yet)."""
        self.next_seq = 0

    def add(self, batch: Batch | None) -> None:
        if batch is None:
            return
        self.batches.append(batch)
        self.next_seq = batch[0] + batch[1]
        self.apart += 1
        if self.apart == MERGE:
            tail = self.batches[-MERGE:]
            lines = b"\n".join(zlib.decompress(packed) for _, _, packed in tail)
            count = sum(n for _, n, _ in tail)
            self.batches[-MERGE:] = [(tail[0][0], count, zlib.compress(lines, 1))]
            self.apart = 0
