"""The `ctx.session_persistence` seam: its protocol, key, values and errors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import msgspec

from ..kernel import ServiceKey
from ..session import ForkSeed, SessionEvent, SessionHeader

if TYPE_CHECKING:
    from ..kernel import CancelSignal
    from ..session import Session

__all__ = [
    "SESSION_PERSISTENCE",
    "CorruptLogError",
    "ForkSeed",  # defined in dsh.session, re-exported: persistence.fork returns it
    "LeaseLostError",
    "PersistenceError",
    "Record",
    "Salvage",
    "SeqMismatchError",
    "SessionExistsError",
    "SessionLiveError",
    "SessionLocation",
    "SessionLockedError",
    "SessionPersistence",
    "StoredLog",
    "UnknownSessionError",
]


class PersistenceError(RuntimeError):
    """A persistence operation failed (the message names the session)."""


class UnknownSessionError(PersistenceError, LookupError):
    """No stored log has this session id."""


class SessionExistsError(PersistenceError):
    """A stored log already has this id (creation never overwrites)."""


class SessionLiveError(PersistenceError):
    """The session is live in this process: it has a writer, so it is not prepared again,
    appended to from outside, or repaired."""


class SessionLockedError(PersistenceError):
    """Another writer (another process, or another store of this one) holds the session's
    writer lease; `holder` names it."""

    def __init__(self, session_id: str, holder: str) -> None:
        super().__init__(
            f"session {session_id!r} is being written by {holder}: wait until it finishes, "
            "or stop it (its lease is freed the moment it exits)"
        )
        self.session_id = session_id
        self.holder = holder


class LeaseLostError(PersistenceError):
    """This writer's lease on the session is gone: it may no longer append."""


class SeqMismatchError(PersistenceError):
    """An append whose first seq is not the stored next seq."""


class CorruptLogError(PersistenceError):
    """A stored log that cannot be read (not a torn tail: that one is truncated)."""


class SessionLocation(msgspec.Struct, frozen=True):
    """Where a backend keeps (or would keep) a session: `kind` is the backend's name."""

    kind: str
    path: Path


class Record(msgspec.Struct, frozen=True):
    """One event as stored: its seq, type and time, and its JSON text (one line, no newline)."""

    seq: int
    type: str
    time: int
    text: str


class StoredLog(msgspec.Struct, frozen=True):
    """A stored session: its header and events.

    `repair` holds the crash-repair closers at the end of `events` (committed by `load` and
    `prepare`, only proposed by `inspect`); `torn_bytes` is the size of the torn tail that was
    (or would be) truncated first. `live` says the session has a writer in this process.
    """

    header: SessionHeader
    events: tuple[SessionEvent, ...]
    repair: tuple[SessionEvent, ...] = ()
    torn_bytes: int = 0
    live: bool = False

    @property
    def id(self) -> str:
        return self.header.id


class Salvage(msgspec.Struct, frozen=True):
    """What a repair of a corrupt log kept and moved aside."""

    location: Path
    """The log (or the database) that was repaired."""
    kept: int
    """Events kept: the valid prefix, seqs 0..kept-1."""
    moved: int = 0
    """Lines (or rows) moved to `side_file`."""
    moved_bytes: int = 0
    side_file: Path | None = None
    """Where the rest went, as it was stored; None when the log was intact."""


@runtime_checkable
class SessionPersistence(Protocol):
    """The persistence seam (SPEC §3.8). Every method names sessions by id."""

    def locate(self, header: SessionHeader) -> SessionLocation | None:
        """Where the session is (or would be) stored. No I/O."""
        ...

    async def create(self, header: SessionHeader) -> None:
        """Store a header-only session; `SessionExistsError` when the id is taken."""
        ...

    async def append(self, session_id: str, events: Sequence[SessionEvent]) -> None:
        """Durably append; the first seq must be the stored next seq."""
        ...

    async def prepare(self, session_id: str, signal: CancelSignal | None = None) -> Session:
        """An unpublished `Session` seeded with the stored, repaired log (commits the repair)."""
        ...

    async def load(self, session_id: str) -> StoredLog:
        """The balanced stored log (commits a cold crash repair)."""
        ...

    async def inspect(self, session_id: str, signal: CancelSignal | None = None) -> StoredLog:
        """The stored log with the repair it would need; changes nothing."""
        ...

    async def read_from(self, session_id: str, from_seq: int) -> list[SessionEvent]:
        """The stored events from `from_seq` on (no repair)."""
        ...

    async def list(self) -> list[SessionHeader]:
        """Headers of the stored sessions that have events."""
        ...

    async def fork(self, source_id: str, boundary: int | None = None) -> ForkSeed:
        """The seed of a fork of a stored session through `boundary` (inclusive)."""
        ...

    async def salvage(self, session_id: str) -> Salvage:
        """Cut a corrupt stored log back to its longest valid prefix; the rest is moved to a
        side file (dsh's addition to the seam: `dsh sessions repair`)."""
        ...


SESSION_PERSISTENCE: ServiceKey[SessionPersistence] = ServiceKey("session_persistence")
"""The key of `ctx.session_persistence` (a `SessionPersistence`)."""
