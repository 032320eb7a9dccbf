"""The `ctx.session_persistence` seam: its protocol, key and values. Declared here, below the
layers that ask whether a store is mounted (the agents, the loop, ACP); the backends and
their errors are `dsh.persistence`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import msgspec

from ..kernel import ServiceKey
from ._envelope import SessionEvent
from ._fork import ForkSeed
from ._header import SessionHeader

if TYPE_CHECKING:
    from ..kernel import CancelSignal
    from ._session import Session

__all__ = [
    "SESSION_PERSISTENCE",
    "Salvage",
    "SessionLocation",
    "SessionPersistence",
    "StoredLog",
]


class SessionLocation(msgspec.Struct, frozen=True):
    """Where a backend keeps (or would keep) a session: `kind` is the backend's name."""

    kind: str
    path: Path


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
