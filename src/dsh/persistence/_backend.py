"""The storage boundary under the seam: what a backend (JSONL, SQLite, yours) implements."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import msgspec

from ..llm import Json, expect
from ..session import SessionHeader
from ._types import Record, Salvage, SeqMismatchError, SessionLocation

__all__ = ["RawLog", "Salvager", "SessionBackend", "WriterLease", "check_contiguous"]


class RawLog(msgspec.Struct, frozen=True):
    """A stored log as parsed JSON: the header line and the event rows (packed rows already
    expanded). `torn_bytes`: the size of a torn tail that was found (and truncated if asked).
    For messages: `source` names the log (its file; a database and session), `locate` where
    row `index` is (-1: the header), e.g. `…/session.jsonl: line 7`."""

    header: Mapping[str, Json]
    rows: list[Mapping[str, Json]]
    torn_bytes: int = 0
    source: str = "the log"
    locate: Callable[[int], str] | None = msgspec.field(default=None)

    @property
    def next_seq(self) -> int:
        return expect(self.rows[-1]["seq"], int) + 1 if self.rows else 0

    def where(self, index: int) -> str:
        """Where row `index` (-1: the header) is stored."""
        if self.locate is not None:
            return self.locate(index)
        return f"{self.source}: " + ("header" if index < 0 else f"event row {index + 1}")


@runtime_checkable
class SessionBackend(Protocol):
    """Synchronous storage of session logs (the seam runs it in worker threads).

    Calls for one session never overlap; calls for different sessions may. A backend keeps
    records byte-for-byte (the text it is given is the text it returns) and never rewrites
    stored records: it only appends, and truncates a torn tail when asked.

    Optional: a class attribute `inline_appends = True` says a non-durable `append` is a few
    fast calls (memory, a local file's page cache), which the write coordinator then makes on
    the event loop instead of in a thread (durable writes and `sync` stay in threads);
    `inline_writes = True`, that every write and `sync` is (memory), made on the loop too; an
    attribute `write_threads = N` says its writes need no more than N worker threads: the
    pool starts no more for them (default: the pool's limit, for a store across a network,
    whose round trips overlap).
    """

    name: str
    """Short name, reported as `SessionLocation.kind`."""
    store_id: str
    """Identifies the underlying store (e.g. a resolved path): one live writer per session
    is enforced per `(store_id, session id)` in this process."""

    def locate(self, header: SessionHeader) -> SessionLocation:
        """Where `header`'s session is or would be stored. No I/O."""
        ...

    def exists(self, session_id: str) -> bool: ...

    def create(self, header: SessionHeader, records: Sequence[Record], *, durable: bool) -> None:
        """Atomically store a new log (header, then `records` from seq 0); never overwrites
        (`SessionExistsError`)."""
        ...

    def append(self, session_id: str, records: Sequence[Record], *, durable: bool) -> None:
        """Append contiguous records; the first seq must be the stored next seq
        (`SeqMismatchError`); unknown id: `UnknownSessionError`. All or nothing."""
        ...

    def sync(self, session_id: str) -> None:
        """Make every record appended so far durable."""
        ...

    def read(self, session_id: str, *, from_seq: int = 0, truncate_torn: bool = False) -> RawLog:
        """The stored log (rows with seq >= `from_seq`). A torn tail is reported, and cut off
        when `truncate_torn`."""
        ...

    def headers(self) -> list[Mapping[str, Json]]:
        """The header lines of every stored session that has at least one event."""
        ...

    def close(self) -> None: ...


class WriterLease(Protocol):
    """A backend's proof that this process is a session's only writer (across processes).

    A backend that offers one has `acquire_writer(session_id, header=None) -> WriterLease`
    (`header`: a session not stored yet, so a file store knows its folder), raising
    `SessionLockedError` (naming the holder) when another writer has the session, never
    waiting, and refuses appends of a writer whose lease was lost (`LeaseLostError`). A
    holder that dies loses it (a file lock through the operating system, a database lock with
    its connection). This process takes it once per session and shares it (`hold_writer`):
    the write coordinator before a session's log is read for resume (or, for a new session,
    before it is created) until the final drain; a crash repair, an append or create through
    the seam, and a salvage for their duration."""

    def release(self) -> None: ...


class Salvager(Protocol):
    """A backend that can repair a corrupt log (`dsh sessions repair`) has
    `salvage(session_id, keep) -> Salvage`: read the longest prefix of the log that parses (a
    `RawLog`, header included), keep its first `keep(prefix)` events, and move everything
    stored after them, as stored, to a side file (its path in the result). `keep` raises
    `CorruptLogError` when nothing can be kept; then nothing changes. An intact log is left
    as it is (`side_file` None). An explicit repair, never automatic."""

    def salvage(self, session_id: str, keep: Callable[[RawLog], int]) -> Salvage: ...


def check_contiguous(session_id: str, records: Sequence[Record], first: int) -> None:
    """Raise `SeqMismatchError` unless `records` are numbered `first`, `first + 1`, …"""
    for offset, stored in enumerate(records):
        if stored.seq != first + offset:
            raise SeqMismatchError(
                f"session {session_id!r}: expected seq {first + offset}, got {stored.seq}"
            )
