"""Durable sessions: the `ctx.session_persistence` seam, the write coordinator, the JSONL,
SQLite and PostgreSQL backends, crash repair, and resume."""

from typing import TYPE_CHECKING, Any

from .._lazy import lazy_attribute
from ._backend import RawLog, Salvager, SessionBackend, WriterLease
from ._events import PERSISTENCE_WRITTEN, Written
from ._jsonl import JsonlBackend, project_dir_name
from ._lease import FileLease
from ._memory import MemoryBackend
from ._plugin import (
    PersistenceConfig,
    PersistencePlugin,
    default_root,
    describe_store,
    mount_persistence,
    store_config,
)
from ._repair import (
    NOT_STARTED_TEXT,
    OUTCOME_UNKNOWN_TEXT,
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    Repair,
    repair_closers,
)
from ._spill import BlobStore, CachedSpills, FolderSpills, SpillArea
from ._stored import StoredSessions
from ._summaries import CORRUPT_TITLE, stored_summaries
from ._types import (
    SESSION_PERSISTENCE,
    CorruptLogError,
    ForkSeed,
    LeaseLostError,
    PersistenceError,
    Record,
    Salvage,
    SeqMismatchError,
    SessionExistsError,
    SessionLiveError,
    SessionLocation,
    SessionLockedError,
    SessionPersistence,
    StoredLog,
    UnknownSessionError,
)

if TYPE_CHECKING:
    from ._postgres import PostgresBackend, PostgresLease
    from ._sqlite import SqliteBackend

# The SQLite and PostgreSQL backends load when named: the default JSONL store needs neither.
_LAZY = {
    "PostgresBackend": "._postgres",
    "PostgresLease": "._postgres",
    "SqliteBackend": "._sqlite",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, name, _LAZY)


__all__ = [
    "CORRUPT_TITLE",
    "NOT_STARTED_TEXT",
    "OUTCOME_UNKNOWN_TEXT",
    "PERSISTENCE_WRITTEN",
    "SESSION_PERSISTENCE",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "BlobStore",
    "CachedSpills",
    "CorruptLogError",
    "FileLease",
    "FolderSpills",
    "ForkSeed",
    "JsonlBackend",
    "MemoryBackend",
    "LeaseLostError",
    "PersistenceConfig",
    "PersistenceError",
    "PersistencePlugin",
    "PostgresBackend",
    "PostgresLease",
    "RawLog",
    "Record",
    "Salvage",
    "Salvager",
    "Repair",
    "SeqMismatchError",
    "SessionBackend",
    "SessionExistsError",
    "SessionLiveError",
    "SessionLockedError",
    "SessionLocation",
    "SessionPersistence",
    "SpillArea",
    "SqliteBackend",
    "StoredLog",
    "StoredSessions",
    "UnknownSessionError",
    "WriterLease",
    "Written",
    "default_root",
    "describe_store",
    "mount_persistence",
    "project_dir_name",
    "repair_closers",
    "store_config",
    "stored_summaries",
]
