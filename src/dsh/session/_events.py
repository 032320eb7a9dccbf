"""The live events of the session store."""

from __future__ import annotations

import msgspec

from ..kernel import EmitSpec, EventSpec, Mode, ParallelSpec
from ._envelope import SessionEvent
from ._session import Session

__all__ = [
    "SESSION_CREATED",
    "SESSION_DISPOSED",
    "SESSION_EVENT",
    "SESSION_FLUSH",
    "SessionEventPayload",
]


class SessionEventPayload(msgspec.Struct, frozen=True):
    session: Session
    event: SessionEvent


def event_payload(session: Session, event: SessionEvent) -> SessionEventPayload:
    """`SessionEventPayload(session, event)`, for the append path."""
    return SessionEventPayload(session, event)


SESSION_CREATED: EmitSpec[Session] = EventSpec.declare(
    "session/created",
    Mode.EMIT,
    Session,
    vetoing=True,
    doc="A session was published (`SessionStore.announce`); a synchronous raise vetoes it.",
)
SESSION_EVENT: EmitSpec[SessionEventPayload] = EventSpec.declare(
    "session/event",
    Mode.EMIT,
    SessionEventPayload,
    doc="An event was committed to an entered session (synchronously, after the append).",
)
SESSION_FLUSH: ParallelSpec[Session] = EventSpec.declare(
    "session/flush",
    Mode.PARALLEL,
    Session,
    doc="`SessionStore.flush`: persistence drains what it holds of the session.",
)
SESSION_DISPOSED: EmitSpec[Session] = EventSpec.declare(
    "session/disposed",
    Mode.EMIT,
    Session,
    doc="An announced session left the store (also on a vetoed creation's rollback).",
)
