"""The `ctx.session_persistence` seam's errors and stored records; its protocol, key and values
are declared in `dsh.session` (re-exported here)."""

from __future__ import annotations

import msgspec

from ..session import (
    SESSION_PERSISTENCE,
    ForkSeed,
    Salvage,
    SessionLocation,
    SessionPersistence,
    StoredLog,
)

__all__ = [
    "SESSION_PERSISTENCE",
    "CorruptLogError",
    "ForkSeed",  # this and the seam's protocol, key and values: dsh.session's, re-exported
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


class Record(msgspec.Struct, frozen=True):
    """One event as stored: its seq, type and time, and its JSON text (one line, no newline)."""

    seq: int
    type: str
    time: int
    text: str
