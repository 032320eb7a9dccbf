"""The event-sourced session log: `Session`, `SessionStore` (`ctx.sessions`), durable types."""

from ._envelope import InvalidEventError, ReplaceOp, SessionEvent, SurfaceOp
from ._events import (
    SESSION_CREATED,
    SESSION_DISPOSED,
    SESSION_EVENT,
    SESSION_FLUSH,
    SessionEventPayload,
)
from ._fork import ForkError, ForkSeed, fork_seed
from ._header import FORMAT_VERSION, FORMAT_VERSIONS, EpochHeader, SessionHeader, SessionMeta
from ._history import History
from ._import import import_events
from ._json import FrozenDict, FrozenList, LosslessJsonError, freeze_json, thaw_json
from ._persistence import (
    SESSION_PERSISTENCE,
    Salvage,
    SessionLocation,
    SessionPersistence,
    StoredLog,
)
from ._registry import (
    SURFACE_TYPES,
    EventKind,
    UnknownEventTypeError,
    durable_event_types,
    event_kind,
    register_event_type,
)
from ._session import ReentrantAppendError, Session, Surface, event_type
from ._store import SESSIONS, DuplicateSessionError, SessionPlugin, SessionStore
from ._summary import SessionSummary, summary_of
from ._turns import LastTurn, last_turn
from ._usage import (
    ModelRoute,
    SessionUsage,
    TurnUsage,
    Usage,
    session_usage,
    usage_by,
    usage_by_model,
    usage_of,
)

__all__ = [
    "SESSIONS",
    "FORMAT_VERSION",
    "FORMAT_VERSIONS",
    "SESSION_CREATED",
    "SESSION_DISPOSED",
    "SESSION_EVENT",
    "SESSION_FLUSH",
    "SESSION_PERSISTENCE",
    "SURFACE_TYPES",
    "DuplicateSessionError",
    "EpochHeader",
    "EventKind",
    "ForkError",
    "ForkSeed",
    "FrozenDict",
    "FrozenList",
    "History",
    "InvalidEventError",
    "LastTurn",
    "LosslessJsonError",
    "ModelRoute",
    "ReentrantAppendError",
    "ReplaceOp",
    "Salvage",
    "Session",
    "SessionEvent",
    "SessionEventPayload",
    "SessionHeader",
    "SessionLocation",
    "SessionMeta",
    "SessionPersistence",
    "SessionPlugin",
    "SessionStore",
    "SessionSummary",
    "SessionUsage",
    "StoredLog",
    "Surface",
    "SurfaceOp",
    "TurnUsage",
    "UnknownEventTypeError",
    "Usage",
    "durable_event_types",
    "event_kind",
    "fork_seed",
    "freeze_json",
    "import_events",
    "event_type",
    "last_turn",
    "register_event_type",
    "session_usage",
    "summary_of",
    "thaw_json",
    "usage_by",
    "usage_by_model",
    "usage_of",
]
