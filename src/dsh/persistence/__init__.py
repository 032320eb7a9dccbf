"""Durable sessions: the `ctx.session_persistence` seam, the write coordinator, the JSONL and
SQLite backends, crash repair, and resume."""

from ._backend import RawLog, SessionBackend, WriterLease
from ._events import PERSISTENCE_WRITTEN, Written
from ._jsonl import JsonlBackend, project_dir_name
from ._lease import FileLease
from ._plugin import PersistenceConfig, PersistencePlugin, default_root, mount_persistence
from ._repair import (
    NOT_STARTED_TEXT,
    OUTCOME_UNKNOWN_TEXT,
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    Repair,
    open_turn,
    repair_closers,
)
from ._sqlite import SqliteBackend
from ._stored import StoredSessions
from ._types import (
    SESSION_PERSISTENCE,
    CorruptLogError,
    ForkSeed,
    PersistenceError,
    Record,
    SeqMismatchError,
    SessionExistsError,
    SessionLiveError,
    SessionLocation,
    SessionLockedError,
    SessionPersistence,
    StoredLog,
    UnknownSessionError,
)

__all__ = [
    "NOT_STARTED_TEXT",
    "OUTCOME_UNKNOWN_TEXT",
    "PERSISTENCE_WRITTEN",
    "SESSION_PERSISTENCE",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "CorruptLogError",
    "FileLease",
    "ForkSeed",
    "JsonlBackend",
    "PersistenceConfig",
    "PersistenceError",
    "PersistencePlugin",
    "RawLog",
    "Record",
    "Repair",
    "SeqMismatchError",
    "SessionBackend",
    "SessionExistsError",
    "SessionLiveError",
    "SessionLocation",
    "SessionLockedError",
    "SessionPersistence",
    "SqliteBackend",
    "StoredLog",
    "StoredSessions",
    "UnknownSessionError",
    "WriterLease",
    "Written",
    "default_root",
    "mount_persistence",
    "open_turn",
    "project_dir_name",
    "repair_closers",
]
