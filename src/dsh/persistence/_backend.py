"""The storage boundary under the seam: what a backend (JSONL, SQLite, yours) implements."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..session import SessionHeader
from ._types import Record, Salvage, SessionLocation

__all__ = ["RawLog", "SessionBackend", "WriterLease"]


@dataclass(frozen=True, slots=True)
class RawLog:
    """A stored log as parsed JSON: the header line and the event rows (packed rows already
    expanded). `torn_bytes`: the size of a torn tail that was found (and truncated if asked).
    For messages: `source` names the log (its file; a database and session), `locate` where
    row `index` is (-1: the header), e.g. `…/session.jsonl: line 7`."""

    header: Mapping[str, Any]
    rows: list[Mapping[str, Any]]
    torn_bytes: int = 0
    source: str = "the log"
    locate: Callable[[int], str] | None = field(default=None, compare=False)

    @property
    def next_seq(self) -> int:
        return int(self.rows[-1]["seq"]) + 1 if self.rows else 0

    def where(self, index: int) -> str:
        """Where row `index` (-1: the header) is stored."""
        if self.locate is not None:
            return self.locate(index)
        return f"{self.source}: " + ("header" if index < 0 else f"event row {index + 1}")


class WriterLease(Protocol):
    """The right to write one session, held by one process at a time."""

    def release(self) -> None:
        """Give the right up (idempotent). A holder that dies releases it too: a file lock
        through the operating system, a database lease through its expiry."""
        ...


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

    def acquire_writer(self, session_id: str, header: SessionHeader | None = None) -> WriterLease:
        """Claim the right to write `session_id`, exclusively across processes, until the
        lease is released. `header` is given for a session that is not stored yet (without
        it, an unknown id is `UnknownSessionError`). Raises `SessionLockedError` naming the
        holder while another process holds it; never waits.
        The seam calls it once per session while this process holds it (every writer, a
        repair, an append through the seam share that one lease)."""
        ...

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

    def salvage(self, session_id: str, keep: Callable[[RawLog], int]) -> Salvage:
        """Cut a corrupt log back to a valid prefix (an explicit repair, never automatic):
        read the longest prefix that parses (a `RawLog`, header included), keep its first
        `keep(prefix)` events and move everything stored after them, as stored, to a side
        file (its path in the result). `keep` raises `CorruptLogError` when nothing can be
        kept; then nothing changes. An intact log is left as it is (`side_file` None)."""
        ...

    def close(self) -> None: ...
