"""The live events of the session store."""

from __future__ import annotations

from dataclasses import dataclass

from ..kernel import EventSpec, Mode
from ._envelope import SessionEvent
from ._session import Session

__all__ = [
    "SESSION_CREATED",
    "SESSION_DISPOSED",
    "SESSION_EVENT",
    "SESSION_FLUSH",
    "SessionEventPayload",
]


@dataclass(frozen=True, slots=True)
class SessionEventPayload:
    session: Session
    event: SessionEvent


SESSION_CREATED: EventSpec[Session, None] = EventSpec.declare(
    "session/created",
    Mode.EMIT,
    Session,
    vetoing=True,
    doc="A session was published (`SessionStore.announce`); a synchronous raise vetoes it.",
)
SESSION_EVENT: EventSpec[SessionEventPayload, None] = EventSpec.declare(
    "session/event",
    Mode.EMIT,
    SessionEventPayload,
    doc="An event was committed to an entered session (synchronously, after the append).",
)
SESSION_FLUSH: EventSpec[Session, None] = EventSpec.declare(
    "session/flush",
    Mode.PARALLEL,
    Session,
    doc="`SessionStore.flush`: persistence drains what it holds of the session.",
)
SESSION_DISPOSED: EventSpec[Session, None] = EventSpec.declare(
    "session/disposed",
    Mode.EMIT,
    Session,
    doc="An announced session left the store (also on a vetoed creation's rollback).",
)
