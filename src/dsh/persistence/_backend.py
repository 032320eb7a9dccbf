"""The storage boundary under the seam: what a backend (JSONL, SQLite, yours) implements."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..session import SessionHeader
from ._types import Record, SeqMismatchError, SessionLocation

__all__ = ["RawLog", "SessionBackend", "WriterLease", "check_contiguous"]


@dataclass(frozen=True, slots=True)
class RawLog:
    """A stored log as parsed JSON: the header line and the event rows (packed rows already
    expanded). `torn_bytes`: the size of a torn tail that was found (and truncated if asked)."""

    header: Mapping[str, Any]
    rows: list[Mapping[str, Any]]
    torn_bytes: int = 0

    @property
    def next_seq(self) -> int:
        return int(self.rows[-1]["seq"]) + 1 if self.rows else 0


@runtime_checkable
class SessionBackend(Protocol):
    """Synchronous storage of session logs (the seam runs it in worker threads).

    Calls for one session never overlap; calls for different sessions may. A backend keeps
    records byte-for-byte (the text it is given is the text it returns) and never rewrites
    stored records: it only appends, and truncates a torn tail when asked.
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

    def headers(self) -> list[Mapping[str, Any]]:
        """The header lines of every stored session that has at least one event."""
        ...

    def close(self) -> None: ...


class WriterLease(Protocol):
    """A backend's proof that this process is a session's only writer (across processes).

    A backend that offers one has `acquire_writer(session_id) -> WriterLease`, raising
    `SessionLockedError` (naming the holder) when another writer has the session, and
    refuses appends of a writer whose lease was lost (`LeaseLostError`). The write coordinator
    takes it before a session's log is read for resume (or, for a new session, before it is
    created) and releases it after the final drain."""

    def release(self) -> None: ...


def check_contiguous(session_id: str, records: Sequence[Record], first: int) -> None:
    """Raise `SeqMismatchError` unless `records` are numbered `first`, `first + 1`, …"""
    for offset, record in enumerate(records):
        if record.seq != first + offset:
            raise SeqMismatchError(
                f"session {session_id!r}: expected seq {first + offset}, got {record.seq}"
            )
